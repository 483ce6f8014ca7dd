/**
 * Checks a rule as sent and turns it into its evaluation-ready form. Every refusal is a 400
 * with the interface's exact message where it names one; names that must exist (attributes,
 * regulations, entity types) are collected as the constraint (compile-constraint) and the
 * action (compile-action) are checked, and checked against the database by the service, which
 * answers the interface's 422s.
 */
import { badRequest } from '../errors.js';
import { valueTooDeep } from '../util/json-safety.js';
import { parseAction } from './compile-action.js';
import { MAX_DEPTH, parseConstraint } from './compile-constraint.js';
import { ruleKeyMessage, ruleNameMessage } from './compile-names.js';
import { absent, clip, isObject, longerThan, MAX_NAME, type Json } from './compile-input.js';
import type { CompiledRule, RuleReferences, RuleType } from './model.js';

export const MAX_RULE_JSON = 65_536;
export const RULE_NOT_JSON = 'Cannot parse JSON of rule';

/** Members of the rule itself; the three the vault sets are accepted and ignored. */
const RULE_MEMBERS = new Set(['key', 'name', 'type', 'constraint', 'action', 'executionOrder', 'createdDate', 'modifiedDate']);

export interface ParsedRule {
  rule: CompiledRule;
  /** The rule as sent, without the members the vault sets: what GET returns. */
  definition: Json;
  executionOrder?: number;
}

function emptyReferences(): RuleReferences {
  return { attributes: new Set(), regulations: new Set(), tags: new Set(), entityTypes: new Set(), subAttributes: new Set(), actionTags: new Set() };
}

/** JSON levels a rule may span: MAX_DEPTH constraints of two levels each, plus the rule and a list. */
const MAX_JSON_LEVELS = 2 * MAX_DEPTH + 4;

export function parseRule(input: unknown): ParsedRule {
  if (!isObject(input)) throw badRequest(RULE_NOT_JSON);
  // Before anything recursive (JSON.stringify, parseConstraint) touches the input.
  if (valueTooDeep(input, MAX_JSON_LEVELS)) throw badRequest('Rule constraints are nested too deeply');
  for (const member of Object.keys(input)) {
    if (!RULE_MEMBERS.has(member)) throw badRequest(`Unknown member ${clip(member)} in rule`);
  }
  const { key, name, type, constraint, action, executionOrder } = input;
  if (typeof key !== 'string' || key.trim() === '') throw badRequest('Rule key is required');
  if (longerThan(key, MAX_NAME)) throw badRequest(ruleKeyMessage());
  if (!absent(name) && (typeof name !== 'string' || longerThan(name, MAX_NAME))) throw badRequest(ruleNameMessage());
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
