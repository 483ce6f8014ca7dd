/**
 * Checks an action as sent and turns it into its evaluation-ready form, collecting the tags
 * and regulations it names for the service to check.
 */
import { badRequest } from '../errors.js';
import { parseIsoDate } from '../util/time.js';
import { absent, checkUnknownMembers, longerThan, MAX_MESSAGE, MAX_NAME, type Json } from './compile-input.js';
import type { EventType } from './engine.js';
import { ALERT_LEVELS, EVENT_TYPES, type Action, type AlertLevel, type RuleReferences, type RuleType } from './model.js';

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

export function parseAction(input: Json, ruleType: RuleType, refs: RuleReferences): Action {
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
    if (typeof tag !== 'string' || tag.length === 0 || longerThan(tag, MAX_NAME)) throw badRequest(`${label} action tag must be specified as a string`);
    return tag;
  };
  switch (type) {
    case 'alert': {
      const rawLevel = absent(input.alertLevel) ? 'NORMAL' : input.alertLevel;
      const level = typeof rawLevel === 'string' ? rawLevel.toUpperCase() : '';
      if (!ALERT_LEVELS.includes(level as AlertLevel)) throw badRequest(`Alert level must be one of ${ALERT_LEVELS.join(', ')}`);
      const { message } = input;
      if (!absent(message) && (typeof message !== 'string' || longerThan(message, MAX_MESSAGE))) {
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
      if (typeof regulation !== 'string' || regulation.length === 0 || longerThan(regulation, MAX_NAME)) {
        throw badRequest('Regulation action regulation must be specified as a string');
      }
      return { type, regulation };
    }
    case 'block': {
      const { message } = input;
      if (!absent(message) && (typeof message !== 'string' || message.length === 0 || longerThan(message, MAX_MESSAGE))) {
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
