/**
 * The names a new or changed rule may hold: its key, its name and those its constraints list
 * must be free of control characters, which would reach logs, alerts, the console and exports
 * as they are. Checked on save only, never by `parseRule`, so a rule stored before the check
 * still loads and is evaluated.
 */
import { badRequest } from '../errors.js';
import { hasControlCharacter } from '../util/characters.js';
import { MAX_NAME } from './compile-input.js';
import type { CompiledRule, Constraint } from './model.js';

export const ruleKeyMessage = () => `Rule key must be at most ${MAX_NAME} characters, without control characters`;
export const ruleNameMessage = () => `Rule name must be a string of at most ${MAX_NAME} characters, without control characters`;
export const listNamesMessage = (label: string) => `Constraint ${label} names must be 1 to ${MAX_NAME} characters, without control characters`;
export const valueAttributeMessage = () => `Entity value constraint attribute must be 1 to ${MAX_NAME} characters, without control characters`;

/**
 * `stored`: the rule saved under this key, whose names may be sent again as they are (clients
 * post back the rule they read): only names it does not hold are refused. `storedTags`: tags
 * stored by an earlier release with such a name, which a tag constraint may name, as any
 * other path may give them.
 */
export function checkRuleNames(rule: CompiledRule, stored?: CompiledRule, storedTags: ReadonlySet<string> = new Set()): void {
  const kept = new Set<string>();
  if (stored) visitNames(stored, (name) => kept.add(name));
  visitNames(rule, (name, message, list) => {
    if (hasControlCharacter(name) && !kept.has(name) && !(list === 'tag' && storedTags.has(name))) throw badRequest(message());
  });
}

/** The names a tag constraint lists that hold a control character: worth looking up only then. */
export function controlTagNames(rule: CompiledRule): string[] {
  const found: string[] = [];
  visitNames(rule, (name, _message, list) => {
    if (list === 'tag' && hasControlCharacter(name)) found.push(name);
  });
  return found;
}

/** Whether any name of the rule holds a control character: only then is the stored rule worth reading. */
export function hasControlNames(rule: CompiledRule): boolean {
  let found = false;
  visitNames(rule, (name) => {
    found ||= hasControlCharacter(name);
  });
  return found;
}

/** `list`: the constraint list the name is in, if any. */
type Visit = (name: string, message: () => string, list?: string) => void;

function visitNames(rule: CompiledRule, visit: Visit): void {
  visit(rule.key, ruleKeyMessage);
  if (rule.name !== undefined) visit(rule.name, ruleNameMessage);
  visitConstraint(rule.constraint, visit);
}

function visitList(names: Iterable<string>, label: string, visit: Visit): void {
  for (const name of names) visit(name, () => listNamesMessage(label), label);
}

function visitConstraint(constraint: Constraint, visit: Visit): void {
  switch (constraint.type) {
    case 'all':
    case 'any':
      for (const c of constraint.constraints) visitConstraint(c, visit);
      return;
    case 'attribute':
      return visitList(constraint.attributes, 'attribute', visit);
    case 'tag':
      return visitList(constraint.tags, 'tag', visit);
    case 'regulation':
      return visitList(constraint.regulations, 'regulation', visit);
    case 'entityType':
      return visitList(constraint.entityTypes, 'entity type', visit);
    case 'application':
      return visitList(constraint.applications, 'application', visit);
    case 'user':
      return visit(constraint.attribute, valueAttributeMessage);
    default:
      // Geolocation codes and event types are checked against fixed sets; a threshold is a number.
      return;
  }
}
