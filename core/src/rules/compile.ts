/**
 * Checks a rule as sent and turns it into its evaluation-ready form. Every refusal is a 400
 * with the interface's exact message where it names one; names that must exist (attributes,
 * regulations, entity types) are collected here and checked against the database by the
 * service, which answers the interface's 422s.
 */
import { badRequest } from '../errors.js';
import { parseIsoDate } from '../util/time.js';
import { countryCode, subdivisionCode } from './countries.js';
import type { EventType } from './engine.js';
import {
  ALERT_LEVELS,
  EVENT_TYPES,
  PREDICATES,
  type Action,
  type AlertLevel,
  type CompiledRule,
  type Constraint,
  type ListOperator,
  type Predicate,
  type RuleReferences,
  type RuleType,
} from './model.js';
import { compileSafeRegex } from './regex.js';
import { RegexSyntaxError } from './regex-parser.js';
import { valueTooDeep } from '../util/json-safety.js';

export const MAX_RULE_JSON = 65_536;
const MAX_DEPTH = 16;
const MAX_LIST = 1_000;
const MAX_NAME = 256;
const MAX_MESSAGE = 4_096;
export const DEFAULT_BLOCK_MESSAGE = 'The provided data could not be stored, as a rule disallows it';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Optional members may be sent as null (some clients serialise every field). */
const absent = (v: unknown) => v === undefined || v === null;

/** Members of the rule itself; the three the vault sets are accepted and ignored. */
const RULE_MEMBERS = new Set(['key', 'name', 'type', 'constraint', 'action', 'executionOrder', 'createdDate', 'modifiedDate']);

const CONSTRAINT_MEMBERS: Record<string, string[]> = {
  all: ['constraints'],
  any: ['constraints'],
  attribute: ['operator', 'attributes'],
  tag: ['operator', 'tags'],
  regulation: ['operator', 'regulations'],
  geolocation: ['operator', 'countries', 'subdivisions'],
  geo: ['operator', 'countries', 'subdivisions'],
  entityType: ['entityTypes'],
  user: ['attribute', 'predicate', 'value'],
  value: ['attribute', 'predicate', 'value'],
  sentiment: ['threshold'],
  application: ['operator', 'applications'],
  eventType: ['eventTypes'],
};

/** Activity events carry no value, tags or regulations of their own to constrain on. */
const ACTIVITY_CONSTRAINTS = new Set(['all', 'any', 'attribute', 'geolocation', 'geo', 'application', 'eventType']);
/** Data is stored by an application, but the event type and the caller are not what data rules are about. */
const DATA_ONLY_EXCLUDED = new Set(['application', 'eventType']);

const ACTION_MEMBERS: Record<string, string[]> = {
  alert: ['alertLevel', 'message'],
  tag: ['tag', 'status'],
  regulation: ['regulation'],
  entityTag: ['tag', 'status'],
  block: ['message'],
  prohibition: ['status', 'prohibitions'],
  legalHold: ['status'],
  retention: ['expirationDate', 'daysSinceStore', 'daysSinceRead', 'daysSinceAccess', 'autoDelete'],
};
/** Regulations and retention describe stored points; an activity event has none to change. */
const DATA_ONLY_ACTIONS = new Set(['regulation', 'retention']);

export interface ParsedRule {
  rule: CompiledRule;
  /** The rule as sent, without the members the vault sets: what GET returns. */
  definition: Json;
  executionOrder?: number;
}

function emptyReferences(): RuleReferences {
  return { attributes: new Set(), regulations: new Set(), tags: new Set(), entityTypes: new Set(), actionTags: new Set() };
}

/** `KEY.sub` is governed by its definition `KEY`. */
export function rootAttribute(key: string): string {
  const dot = key.indexOf('.');
  return dot === -1 ? key : key.slice(0, dot);
}

function checkUnknownMembers(object: Json, allowed: readonly string[], where: string): void {
  for (const member of Object.keys(object)) {
    if (member !== 'type' && !allowed.includes(member)) throw badRequest(`Unknown member ${clip(member)} in ${where}`);
  }
}

/** Caller text echoed in a message is bounded, so a message cannot be made arbitrarily long. */
function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}

/** JSON levels a rule may span: MAX_DEPTH constraints of two levels each, plus the rule and a list. */
const MAX_JSON_LEVELS = 2 * MAX_DEPTH + 4;

export function parseRule(input: unknown): ParsedRule {
  if (!isObject(input)) throw badRequest('Cannot parse JSON of rule');
  // Before anything recursive (JSON.stringify, parseConstraint) touches the input.
  if (valueTooDeep(input, MAX_JSON_LEVELS)) throw badRequest('Rule constraints are nested too deeply');
  for (const member of Object.keys(input)) {
    if (!RULE_MEMBERS.has(member)) throw badRequest(`Unknown member ${clip(member)} in rule`);
  }
  const { key, name, type, constraint, action, executionOrder } = input;
  if (typeof key !== 'string' || key.trim() === '') throw badRequest('Rule key is required');
  if (key.length > MAX_NAME) throw badRequest(`Rule key must be at most ${MAX_NAME} characters`);
  if (!absent(name) && (typeof name !== 'string' || name.length > MAX_NAME)) throw badRequest(`Rule name must be a string of at most ${MAX_NAME} characters`);
  if (!absent(type) && type !== 'data' && type !== 'activity') throw badRequest('Rule type must be data or activity');
  if (!absent(executionOrder) && (!Number.isSafeInteger(executionOrder) || Math.abs(executionOrder as number) > 1_000_000_000)) {
    throw badRequest('Rule executionOrder must be an integer');
  }
  const ruleType: RuleType = type === 'activity' ? 'activity' : 'data';
  if (!isObject(constraint)) throw badRequest('Rule constraint must be specified as an object');
  if (!isObject(action)) throw badRequest('Rule action must be specified as an object');

  const definition: Json = {};
  for (const [member, value] of Object.entries(input)) {
    if (member !== 'executionOrder' && member !== 'createdDate' && member !== 'modifiedDate') definition[member] = value;
  }
  if (JSON.stringify(definition).length > MAX_RULE_JSON) throw badRequest('Rule is too large');

  const references = emptyReferences();
  const compiledConstraint = parseConstraint(constraint, ruleType, references, 0);
  const compiledAction = parseAction(action, ruleType, references);
  return {
    rule: { key, ...(typeof name === 'string' ? { name } : {}), type: ruleType, constraint: compiledConstraint, action: compiledAction, references },
    definition,
    executionOrder: absent(executionOrder) ? undefined : (executionOrder as number),
  };
}

function listOperator(value: unknown, label: string, allowAll: boolean): ListOperator {
  if (typeof value !== 'string') throw badRequest(`${label} constraint operator must be specified as a string`);
  const operator = value.toLowerCase();
  if (operator === 'any' || operator === 'none' || (allowAll && operator === 'all')) return operator;
  throw badRequest(`Unsupported ${label.toLowerCase()} list operator`);
}

function nameList(value: unknown, message: string): string[] {
  if (!Array.isArray(value) || value.length > MAX_LIST || !value.every((v) => typeof v === 'string' && v.length > 0 && v.length <= MAX_NAME)) {
    throw badRequest(message);
  }
  return [...new Set(value as string[])];
}

function parseConstraint(input: Json, ruleType: RuleType, refs: RuleReferences, depth: number): Constraint {
  if (depth >= MAX_DEPTH) throw badRequest('Rule constraints are nested too deeply');
  const { type } = input;
  if (typeof type !== 'string') throw badRequest('Constraint type must be specified as a string');
  const members = Object.hasOwn(CONSTRAINT_MEMBERS, type) ? CONSTRAINT_MEMBERS[type] : undefined;
  if (!members) throw badRequest('Unrecognized constraint type');
  if (ruleType === 'activity' && !ACTIVITY_CONSTRAINTS.has(type)) throw badRequest(`Constraint type ${type} cannot be used in an activity rule`);
  if (ruleType === 'data' && DATA_ONLY_EXCLUDED.has(type)) throw badRequest(`Constraint type ${type} cannot be used in a data rule`);
  const constraint = constraintByType(input, type, ruleType, refs, depth);
  // After the typed checks, so a missing list gets the interface's message rather than this one.
  checkUnknownMembers(input, members, `${type} constraint`);
  return constraint;
}

function constraintByType(input: Json, type: string, ruleType: RuleType, refs: RuleReferences, depth: number): Constraint {
  switch (type) {
    case 'all':
    case 'any': {
      const list = input.constraints;
      if (!Array.isArray(list) || list.length > MAX_LIST) throw badRequest(`Constraint list of ${type} must be specified as an array`);
      const constraints = list.map((item) => {
        if (!isObject(item)) throw badRequest(`Constraint list of ${type} must contain only constraint objects`);
        return parseConstraint(item, ruleType, refs, depth + 1);
      });
      return { type, constraints };
    }
    case 'attribute': {
      const operator = listOperator(input.operator, 'Attribute', false);
      const attributes = nameList(input.attributes, 'Constraint attribute list must be specified as an array');
      for (const a of attributes) refs.attributes.add(rootAttribute(a));
      return { type, operator, attributes };
    }
    case 'tag': {
      const operator = listOperator(input.operator, 'Tag', true);
      const tags = nameList(input.tags, 'Constraint tag list must be specified as an array');
      for (const t of tags) refs.tags.add(t);
      return { type, operator, tags };
    }
    case 'regulation': {
      const operator = listOperator(input.operator, 'Regulation', true);
      const regulations = nameList(input.regulations, 'Constraint regulation list must be specified as an array');
      for (const r of regulations) refs.regulations.add(r);
      return { type, operator, regulations };
    }
    case 'geolocation':
    case 'geo':
      return parseGeolocation(input);
    case 'entityType': {
      const entityTypes = nameList(input.entityTypes, 'Constraint entity type list must be specified as an array');
      for (const t of entityTypes) refs.entityTypes.add(t);
      return { type, entityTypes: new Set(entityTypes) };
    }
    case 'user':
    case 'value':
      return parseEntityValue(input, refs);
    case 'sentiment': {
      const { threshold } = input;
      if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold < -1 || threshold > 1) {
        throw badRequest('Sentiment constraint threshold must be a number from -1 to 1');
      }
      return { type, threshold };
    }
    case 'application': {
      const operator = listOperator(input.operator, 'Application', false);
      const applications = nameList(input.applications, 'Constraint application list must be specified as an array');
      return { type, operator, applications: new Set(applications) };
    }
    case 'eventType': {
      const list = input.eventTypes;
      if (!Array.isArray(list) || list.length > MAX_LIST) throw badRequest('Constraint event type list must be specified as an array');
      const eventTypes = new Set<EventType>();
      for (const item of list) {
        const upper = typeof item === 'string' ? item.toUpperCase() : '';
        if (!EVENT_TYPES.includes(upper as EventType)) throw badRequest('Unrecognized event type');
        eventTypes.add(upper as EventType);
      }
      return { type, eventTypes };
    }
  }
  throw badRequest('Unrecognized constraint type');
}

function parseGeolocation(input: Json): Constraint {
  const operator = listOperator(input.operator, 'Geolocation', false);
  const { countries, subdivisions } = input;
  if (!absent(countries) && !Array.isArray(countries)) throw badRequest('Geolocation constraint country list must be an array');
  if (!absent(subdivisions) && !Array.isArray(subdivisions)) throw badRequest('Geolocation constraint subdivision list must be an array');
  const countryList = (countries ?? []) as unknown[];
  const subdivisionList = (subdivisions ?? []) as unknown[];
  if (countryList.length === 0 && subdivisionList.length === 0) throw badRequest('Neither countries nor subdivisions specified for geolocation constraint');
  if (countryList.length > MAX_LIST || subdivisionList.length > MAX_LIST) throw badRequest('Geolocation constraint lists may hold at most 1000 codes');
  const countrySet = new Set<string>();
  for (const c of countryList) {
    const code = countryCode(c);
    if (!code) throw badRequest('Countries for geolocation constraint must be specified as ISO 3166-1 two-letter codes');
    countrySet.add(code);
  }
  const subdivisionSet = new Set<string>();
  for (const s of subdivisionList) {
    const code = subdivisionCode(s);
    if (!code) throw badRequest('Subdivisions for geolocation constraint must be specified as ISO 3166-2 hyphenated codes');
    subdivisionSet.add(code);
  }
  return { type: 'geolocation', operator, countries: countrySet, subdivisions: subdivisionSet };
}

function describe(value: unknown): string {
  if (typeof value === 'string') return clip(value);
  return clip(JSON.stringify(value) ?? String(value));
}

function parseEntityValue(input: Json, refs: RuleReferences): Constraint {
  const { attribute, value } = input;
  if (typeof attribute !== 'string' || attribute.length === 0 || attribute.length > MAX_NAME) {
    throw badRequest('Entity value constraint attribute must be specified as a string');
  }
  if (absent(value)) throw badRequest('No value specified for entity value constraint');
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw badRequest('Entity value constraint value must be a string, number or boolean');
  }
  if (typeof value === 'string' && value.length > MAX_MESSAGE) throw badRequest(`Entity value constraint value must be at most ${MAX_MESSAGE} characters`);
  const rawPredicate = absent(input.predicate) ? 'eq' : input.predicate;
  const predicate = typeof rawPredicate === 'string' ? rawPredicate.toLowerCase() : undefined;
  if (!predicate || !PREDICATES.includes(predicate as Predicate)) {
    throw badRequest(`Entity-value attribute constraint predicate ${describe(rawPredicate)} is not supported.`);
  }
  refs.attributes.add(rootAttribute(attribute));
  const base = { type: 'user' as const, attribute, predicate: predicate as Predicate, value };
  switch (predicate) {
    case 'lt':
    case 'gt':
    case 'leq':
    case 'geq': {
      const number = toNumber(value);
      if (number === undefined) throw badRequest(`Entity value constraint value must be a number for predicate ${predicate}`);
      return { ...base, number };
    }
    case 'before':
    case 'after': {
      const iso = parseIsoDate(value);
      if (!iso) throw badRequest(`Entity value constraint value must be an ISO 8601 date for predicate ${predicate}`);
      return { ...base, time: Date.parse(iso) };
    }
    case 'in':
    case 'nin':
      return { ...base, list: new Set(String(value).split(',').map((s) => s.trim())) };
    case 'regex': {
      if (typeof value !== 'string') throw badRequest('Entity value constraint value must be a regular expression for predicate regex');
      try {
        return { ...base, regex: compileSafeRegex(value) };
      } catch (err) {
        if (err instanceof RegexSyntaxError) throw badRequest(`Entity value constraint regular expression is not supported: ${err.message}`);
        throw err;
      }
    }
    default:
      return base;
  }
}

/** Numbers, and strings that spell one (values arrive as text from many clients). */
export function toNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string' || value.trim() === '' || value.length > 64) return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

function optionalBoolean(value: unknown, fallback: boolean, message: string): boolean {
  if (absent(value)) return fallback;
  if (typeof value !== 'boolean') throw badRequest(message);
  return value;
}

function optionalDays(value: unknown, member: string): number | undefined {
  if (absent(value)) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > 365_000) {
    throw badRequest(`Retention action ${member} must be a whole number of days`);
  }
  return value as number;
}

function parseAction(input: Json, ruleType: RuleType, refs: RuleReferences): Action {
  const { type } = input;
  if (typeof type !== 'string') throw badRequest('Action type must be specified as a string');
  const members = Object.hasOwn(ACTION_MEMBERS, type) ? ACTION_MEMBERS[type] : undefined;
  if (!members) throw badRequest('Unrecognized action type');
  if (ruleType === 'activity' && DATA_ONLY_ACTIONS.has(type)) throw badRequest(`Action type ${type} cannot be used in an activity rule`);
  const action = actionByType(input, type);
  checkUnknownMembers(input, members, `${type} action`);
  if (action.type === 'tag' || action.type === 'entityTag') {
    refs.tags.add(action.tag);
    refs.actionTags.add(action.tag);
  }
  if (action.type === 'regulation') refs.regulations.add(action.regulation);
  return action;
}

function actionByType(input: Json, type: string): Action {
  const tagName = (label: string) => {
    const { tag } = input;
    if (typeof tag !== 'string' || tag.length === 0 || tag.length > MAX_NAME) throw badRequest(`${label} action tag must be specified as a string`);
    return tag;
  };
  switch (type) {
    case 'alert': {
      const rawLevel = absent(input.alertLevel) ? 'NORMAL' : input.alertLevel;
      const level = typeof rawLevel === 'string' ? rawLevel.toUpperCase() : '';
      if (!ALERT_LEVELS.includes(level as AlertLevel)) throw badRequest(`Alert level must be one of ${ALERT_LEVELS.join(', ')}`);
      const { message } = input;
      if (!absent(message) && (typeof message !== 'string' || message.length > MAX_MESSAGE)) {
        throw badRequest(`Alert message must be a string of at most ${MAX_MESSAGE} characters`);
      }
      return { type, level: level as AlertLevel, message: typeof message === 'string' ? message : '' };
    }
    case 'tag': {
      const tag = tagName('Tag');
      return { type, tag, status: optionalBoolean(input.status, true, 'Tag action status must be a boolean') };
    }
    case 'entityTag': {
      const tag = tagName('Entity tag');
      return { type, tag, status: optionalBoolean(input.status, true, 'Entity tag action status must be a boolean') };
    }
    case 'regulation': {
      const { regulation } = input;
      if (typeof regulation !== 'string' || regulation.length === 0 || regulation.length > MAX_NAME) {
        throw badRequest('Regulation action regulation must be specified as a string');
      }
      return { type, regulation };
    }
    case 'block': {
      const { message } = input;
      if (!absent(message) && (typeof message !== 'string' || message.length === 0 || message.length > MAX_MESSAGE)) {
        throw badRequest(`Block message must be a string of at most ${MAX_MESSAGE} characters`);
      }
      return { type, ...(typeof message === 'string' ? { message } : {}) };
    }
    case 'prohibition': {
      const list = input.prohibitions;
      const valid = Array.isArray(list) && list.length > 0 && list.every((p) => typeof p === 'string' && EVENT_TYPES.includes(p.toUpperCase() as EventType));
      if (!valid) throw badRequest('Prohibition action prohibitions must be a list of READ, STORE, UPDATE and DELETE');
      const prohibitions = [...new Set((list as string[]).map((p) => p.toUpperCase() as EventType))];
      return { type, status: optionalBoolean(input.status, true, 'Prohibition action status must be a boolean'), prohibitions };
    }
    case 'legalHold':
      return { type, status: optionalBoolean(input.status, true, 'Legal hold action status must be a boolean') };
    case 'retention': {
      let expirationDate: string | undefined;
      if (!absent(input.expirationDate)) {
        expirationDate = parseIsoDate(input.expirationDate);
        if (!expirationDate) throw badRequest('Retention action expirationDate must be an ISO 8601 date');
      }
      const daysSinceStore = optionalDays(input.daysSinceStore, 'daysSinceStore');
      const daysSinceRead = optionalDays(input.daysSinceRead ?? input.daysSinceAccess, 'daysSinceRead');
      if (expirationDate === undefined && daysSinceStore === undefined && daysSinceRead === undefined) {
        throw badRequest('Retention action needs expirationDate, daysSinceStore or daysSinceRead');
      }
      return {
        type,
        ...(expirationDate !== undefined ? { expirationDate } : {}),
        ...(daysSinceStore !== undefined ? { daysSinceStore } : {}),
        ...(daysSinceRead !== undefined ? { daysSinceRead } : {}),
        autoDelete: optionalBoolean(input.autoDelete, false, 'Retention action autoDelete must be a boolean'),
      };
    }
  }
  throw badRequest('Unrecognized action type');
}
