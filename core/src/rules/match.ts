/**
 * Whether a constraint holds. Data rules are asked once per candidate point (the point's
 * attribute, tags, regulations and value), with the rest of the store as context (entity,
 * location, and the request's other values for entity-value constraints); activity rules
 * once per event.
 */
import type { Leaf } from '../definitions/schema.js';
import { meetsThreshold, sentimentScore } from '../sentiment/score.js';
import type { CandidatePoint, EventType, Location, RuleEntity } from './engine.js';
import type { Constraint, ListOperator } from './model.js';
import { rootAttribute, toNumber } from './operands.js';
import { parseIsoMs } from '../util/time.js';

export interface Subject {
  /** The point being judged (data rules). */
  point?: CandidatePoint;
  /** Every point of the request: entity-value constraints read their attribute from these. */
  points: readonly CandidatePoint[];
  entity?: RuleEntity;
  location?: Location;
  eventType?: EventType;
  /** The attribute an activity event is about. */
  attribute?: string;
  applicationId?: string;
}

/** Several sentiment rules may look at the same value: each leaf is scored once. */
const scores = new WeakMap<Leaf, number>();

function scoreOf(leaf: Leaf): number {
  let score = scores.get(leaf);
  if (score === undefined) {
    score = sentimentScore(leaf.value as string);
    scores.set(leaf, score);
  }
  return score;
}

/**
 * An entity-value constraint reads the whole request, whichever of its points is judged: it is
 * answered once per request (the points array every subject of one evaluation shares) rather
 * than once per point, which made a store of n values n² comparisons or regex runs. Rules
 * change the points' tags and regulations, never their values, so the answer holds throughout.
 */
const valueAnswers = new WeakMap<readonly CandidatePoint[], Map<Constraint, boolean>>();

function valueMatches(constraint: Extract<Constraint, { type: 'user' }>, points: readonly CandidatePoint[]): boolean {
  let answers = valueAnswers.get(points);
  if (!answers) {
    answers = new Map();
    valueAnswers.set(points, answers);
  }
  let answer = answers.get(constraint);
  if (answer === undefined) {
    answer = leavesOf(points, constraint.attribute).some((leaf) => compareValues(constraint, leaf.value));
    answers.set(constraint, answer);
  }
  return answer;
}

function listMatch(operator: ListOperator, wanted: readonly string[], has: (name: string) => boolean): boolean {
  switch (operator) {
    case 'any':
      return wanted.some(has);
    case 'all':
      return wanted.every(has);
    case 'none':
      return !wanted.some(has);
  }
}

/** A name in an attribute list matches its definition's points, and `KEY.sub` also the leaf. */
function attributeMatches(name: string, subject: Subject): boolean {
  if (subject.point) {
    const point = subject.point;
    if (name === point.attribute) return true;
    return rootAttribute(name) === point.attribute && point.leaves.some((l) => l.attribute === name || l.attribute.startsWith(`${name}.`));
  }
  const attribute = subject.attribute;
  if (attribute === undefined) return false;
  return attribute === name || rootAttribute(attribute) === name || attribute.startsWith(`${name}.`);
}

/** Leaves of the request that hold the named attribute (`KEY`, or `KEY.sub` and below). */
function leavesOf(points: readonly CandidatePoint[], name: string): Leaf[] {
  const root = rootAttribute(name);
  const out: Leaf[] = [];
  for (const p of points) {
    if (p.attribute !== root) continue;
    for (const leaf of p.leaves) {
      if (leaf.attribute === name || leaf.attribute.startsWith(`${name}.`)) out.push(leaf);
    }
  }
  return out;
}

function compareValues(constraint: Extract<Constraint, { type: 'user' }>, value: Leaf['value']): boolean {
  switch (constraint.predicate) {
    case 'eq':
    case 'neq': {
      const a = toNumber(value);
      const b = toNumber(constraint.value);
      const equal = a !== undefined && b !== undefined ? a === b : String(value) === String(constraint.value);
      return constraint.predicate === 'eq' ? equal : !equal;
    }
    case 'lt':
    case 'gt':
    case 'leq':
    case 'geq': {
      const n = toNumber(value);
      if (n === undefined) return false;
      const limit = constraint.number!;
      return constraint.predicate === 'lt' ? n < limit : constraint.predicate === 'gt' ? n > limit : constraint.predicate === 'leq' ? n <= limit : n >= limit;
    }
    case 'before':
    case 'after': {
      if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(value)) return false;
      const t = parseIsoMs(value);
      if (Number.isNaN(t)) return false;
      return constraint.predicate === 'before' ? t < constraint.time! : t > constraint.time!;
    }
    case 'in':
    case 'nin': {
      // A member equals the value as `eq` has it: numbers as numbers, anything else as text.
      const n = toNumber(value);
      const listed = constraint.list!.has(String(value).trim()) || (n !== undefined && constraint.numbers!.has(n));
      return constraint.predicate === 'in' ? listed : !listed;
    }
    case 'regex':
      return typeof value === 'string' ? constraint.regex!.test(value) : constraint.regex!.test(String(value));
  }
}

export function matches(constraint: Constraint, subject: Subject): boolean {
  switch (constraint.type) {
    case 'all':
      return constraint.constraints.every((c) => matches(c, subject));
    case 'any':
      return constraint.constraints.some((c) => matches(c, subject));
    case 'attribute':
      return listMatch(constraint.operator, constraint.attributes, (name) => attributeMatches(name, subject));
    case 'tag': {
      // The point carries the tags of its definition, its entity and the request; the entity's
      // own set also holds what entityTag actions of this store have just added.
      const point = subject.point;
      return listMatch(constraint.operator, constraint.tags, (tag) => point?.tags.has(tag) === true || subject.entity?.tags.has(tag) === true);
    }
    case 'regulation': {
      const point = subject.point;
      return listMatch(constraint.operator, constraint.regulations, (r) => point?.regulations.has(r) === true);
    }
    case 'geolocation': {
      // An unknown location is in no listed place: `any` fails and `none` holds.
      const loc = subject.location;
      const inside =
        (loc?.country !== undefined && constraint.countries.has(loc.country.toUpperCase())) ||
        (loc?.subdivision !== undefined && constraint.subdivisions.has(loc.subdivision.toUpperCase()));
      return constraint.operator === 'none' ? !inside : inside;
    }
    case 'entityType':
      return subject.entity !== undefined && constraint.entityTypes.has(subject.entity.type);
    case 'user': {
      // Only values present in the request are known: stored ones are encrypted under keys
      // the vault does not hold. No value for the attribute means the constraint fails.
      return valueMatches(constraint, subject.points);
    }
    case 'sentiment': {
      const point = subject.point;
      if (!point) return false;
      // Free text only: dates and file contents carry no sentiment worth scoring.
      return point.leaves.some((leaf) => leaf.type === 'string' && typeof leaf.value === 'string' && meetsThreshold(scoreOf(leaf), constraint.threshold));
    }
    case 'application': {
      const inList = subject.applicationId !== undefined && constraint.applications.has(subject.applicationId);
      return constraint.operator === 'none' ? !inList : inList;
    }
    case 'eventType':
      return subject.eventType !== undefined && constraint.eventTypes.has(subject.eventType);
  }
}
