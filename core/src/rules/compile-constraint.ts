/**
 * Checks a constraint as sent and turns it into its evaluation-ready form, collecting the
 * attributes, tags, regulations and entity types it names for the service to check.
 */
import { badRequest } from '../errors.js';
import { parseIsoDate } from '../util/time.js';
import { absent, checkUnknownMembers, clip, isObject, longerThan, MAX_LIST, MAX_MESSAGE, MAX_NAME, type Json } from './compile-input.js';
import { listNamesMessage, valueAttributeMessage } from './compile-names.js';
import { countryCode, subdivisionCode } from './countries.js';
import type { EventType } from './engine.js';
import { EVENT_TYPES, PREDICATES, type Constraint, type ListOperator, type Predicate, type RuleReferences, type RuleType } from './model.js';
import { rootAttribute, toNumber } from './operands.js';
import { compileSafeRegex } from './regex.js';
import { RegexSyntaxError } from './regex-parser.js';

export const MAX_DEPTH = 16;

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

function listOperator(value: unknown, label: string, allowAll: boolean): ListOperator {
  if (typeof value !== 'string') throw badRequest(`${label} constraint operator must be specified as a string`);
  const operator = value.toLowerCase();
  if (operator === 'any' || operator === 'none' || (allowAll && operator === 'all')) return operator;
  throw badRequest(`Unsupported ${label.toLowerCase()} list operator`);
}

/**
 * A list of names as the interface's `Constraint [label] list must be specified as an array`
 * describes it: anything but an array of strings gets that message; a name of the wrong length
 * or too many of them get one that says so, since the list itself is an array.
 */
function nameList(value: unknown, label: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw badRequest(`Constraint ${label} list must be specified as an array`);
  if (value.length > MAX_LIST) throw badRequest(`Constraint ${label} list may hold at most ${MAX_LIST} names`);
  if (!value.every(isName)) throw badRequest(listNamesMessage(label));
  return [...new Set(value as string[])];
}

function isName(value: string): boolean {
  return value.length > 0 && !longerThan(value, MAX_NAME);
}

/** A rule's attribute name, checked on save: its definition must exist, and a `KEY.sub` path must be in its schema. */
function addAttribute(refs: RuleReferences, name: string): void {
  const root = rootAttribute(name);
  refs.attributes.add(root);
  if (root !== name) refs.subAttributes.add(name);
}

export function parseConstraint(input: Json, ruleType: RuleType, refs: RuleReferences, depth: number): Constraint {
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
      const attributes = nameList(input.attributes, 'attribute');
      for (const a of attributes) addAttribute(refs, a);
      return { type, operator, attributes };
    }
    case 'tag': {
      const operator = listOperator(input.operator, 'Tag', true);
      const tags = nameList(input.tags, 'tag');
      for (const t of tags) refs.tags.add(t);
      return { type, operator, tags };
    }
    case 'regulation': {
      const operator = listOperator(input.operator, 'Regulation', true);
      const regulations = nameList(input.regulations, 'regulation');
      for (const r of regulations) refs.regulations.add(r);
      return { type, operator, regulations };
    }
    case 'geolocation':
    case 'geo':
      return parseGeolocation(input);
    case 'entityType': {
      const entityTypes = nameList(input.entityTypes, 'entity type');
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
      const applications = nameList(input.applications, 'application');
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
  if (typeof attribute !== 'string') throw badRequest('Entity value constraint attribute must be specified as a string');
  if (!isName(attribute)) throw badRequest(valueAttributeMessage());
  if (absent(value)) throw badRequest('No value specified for entity value constraint');
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw badRequest('Entity value constraint value must be a string, number or boolean');
  }
  if (typeof value === 'string' && longerThan(value, MAX_MESSAGE)) throw badRequest(`Entity value constraint value must be at most ${MAX_MESSAGE} characters`);
  const rawPredicate = absent(input.predicate) ? 'eq' : input.predicate;
  const predicate = typeof rawPredicate === 'string' ? rawPredicate.toLowerCase() : undefined;
  if (!predicate || !PREDICATES.includes(predicate as Predicate)) {
    throw badRequest(`Entity-value attribute constraint predicate ${describe(rawPredicate)} is not supported.`);
  }
  addAttribute(refs, attribute);
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
    case 'nin': {
      const list = new Set(String(value).split(',').map((s) => s.trim()));
      const numbers = new Set([...list].flatMap((s) => toNumber(s) ?? []));
      return { ...base, list, numbers };
    }
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
