import test from 'ava';
import type { Leaf } from '../definitions/schema.js';
import { parseRule } from './compile.js';
import type { CandidatePoint, RuleEntity } from './engine.js';
import { matches, type Subject } from './match.js';
import type { Constraint } from './model.js';

function constraint(input: Record<string, unknown>, type: 'data' | 'activity' = 'data'): Constraint {
  return parseRule({ key: 'k', type, constraint: input, action: { type: 'alert' } }).rule.constraint;
}

function point(attribute: string, value: unknown, extra: { tags?: string[]; regulations?: string[]; leaves?: Leaf[] } = {}): CandidatePoint {
  const leaves: Leaf[] =
    extra.leaves ?? [{ attribute, value: value as Leaf['value'], type: typeof value === 'number' ? 'float' : typeof value === 'boolean' ? 'boolean' : 'string' }];
  return { attribute, value, leaves, tags: new Set(extra.tags), regulations: new Set(extra.regulations), sensitivity: 'NORMAL' };
}

const entity = (type = 'datasubject', tags: string[] = []): RuleEntity => ({ id: 'e', type, tags: new Set(tags), legalHold: false });

/** A data subject for one point (the point is also the request's only point). */
function data(p: CandidatePoint, more: Partial<Subject> = {}): Subject {
  return { point: p, points: [p], entity: entity(), ...more };
}

test('attribute: any matches the listed attributes, none the others; a sub-attribute names a leaf', (t) => {
  const any = constraint({ type: 'attribute', operator: 'any', attributes: ['EMAIL', 'PHONE'] });
  t.true(matches(any, data(point('EMAIL', 'a@b.c'))));
  t.false(matches(any, data(point('NAME', 'Ada'))));
  const none = constraint({ type: 'attribute', operator: 'NONE', attributes: ['EMAIL'] });
  t.false(matches(none, data(point('EMAIL', 'a@b.c'))));
  t.true(matches(none, data(point('NAME', 'Ada'))));
  const sub = constraint({ type: 'attribute', operator: 'any', attributes: ['NAME.first'] });
  const name = point('NAME', { first: 'Ada' }, { leaves: [{ attribute: 'NAME.first', value: 'Ada', type: 'string' }] });
  t.true(matches(sub, data(name)));
  const lastOnly = point('NAME', { last: 'L' }, { leaves: [{ attribute: 'NAME.last', value: 'L', type: 'string' }] });
  t.false(matches(sub, data(lastOnly)));
});

test('attribute constraints of activity rules look at the event attribute', (t) => {
  const any = constraint({ type: 'attribute', operator: 'any', attributes: ['EMAIL'] }, 'activity');
  t.true(matches(any, { points: [], attribute: 'EMAIL' }));
  t.true(matches(any, { points: [], attribute: 'EMAIL.domain' }));
  t.false(matches(any, { points: [], attribute: 'PHONE' }));
  t.false(matches(any, { points: [] }));
});

test('tag: any, all and none, over the point and its entity', (t) => {
  const p = point('EMAIL', 'x', { tags: ['pii', 'contact'] });
  t.true(matches(constraint({ type: 'tag', operator: 'any', tags: ['pii', 'other'] }), data(p)));
  t.false(matches(constraint({ type: 'tag', operator: 'any', tags: ['other'] }), data(p)));
  t.true(matches(constraint({ type: 'tag', operator: 'all', tags: ['pii', 'contact'] }), data(p)));
  t.false(matches(constraint({ type: 'tag', operator: 'all', tags: ['pii', 'other'] }), data(p)));
  t.true(matches(constraint({ type: 'tag', operator: 'none', tags: ['other'] }), data(p)));
  t.false(matches(constraint({ type: 'tag', operator: 'none', tags: ['pii'] }), data(p)));
  // An entity tag counts: decisions.md applies the entity's tags to its points.
  t.true(matches(constraint({ type: 'tag', operator: 'any', tags: ['vip'] }), data(point('EMAIL', 'x'), { entity: entity('datasubject', ['vip']) })));
});

test('regulation: any, all and none', (t) => {
  const p = point('EMAIL', 'x', { regulations: ['GDPR', 'CCPA'] });
  t.true(matches(constraint({ type: 'regulation', operator: 'any', regulations: ['GDPR'] }), data(p)));
  t.false(matches(constraint({ type: 'regulation', operator: 'any', regulations: ['HIPAA'] }), data(p)));
  t.true(matches(constraint({ type: 'regulation', operator: 'all', regulations: ['GDPR', 'CCPA'] }), data(p)));
  t.false(matches(constraint({ type: 'regulation', operator: 'all', regulations: ['GDPR', 'HIPAA'] }), data(p)));
  t.true(matches(constraint({ type: 'regulation', operator: 'none', regulations: ['HIPAA'] }), data(p)));
  t.false(matches(constraint({ type: 'regulation', operator: 'none', regulations: ['CCPA'] }), data(p)));
});

test('geolocation: countries and subdivisions, any and none, case-insensitive; an unknown place is in none', (t) => {
  const p = point('EMAIL', 'x');
  const inCa = { country: 'US', subdivision: 'US-CA' };
  const byCountry = constraint({ type: 'geolocation', operator: 'any', countries: ['us'] });
  t.true(matches(byCountry, data(p, { location: inCa })));
  t.false(matches(byCountry, data(p, { location: { country: 'DE' } })));
  t.false(matches(byCountry, data(p, { location: undefined })));
  const bySubdivision = constraint({ type: 'geo', operator: 'any', subdivisions: ['us-ca'] });
  t.true(matches(bySubdivision, data(p, { location: inCa })));
  t.false(matches(bySubdivision, data(p, { location: { country: 'US', subdivision: 'US-NY' } })));
  const none = constraint({ type: 'geolocation', operator: 'none', countries: ['DE', 'FR'] });
  t.true(matches(none, data(p, { location: inCa })));
  t.false(matches(none, data(p, { location: { country: 'FR' } })));
  t.true(matches(none, data(p, { location: undefined })));
  const activity = constraint({ type: 'geolocation', operator: 'any', countries: ['GB'] }, 'activity');
  t.true(matches(activity, { points: [], location: { country: 'GB' } }));
  t.false(matches(activity, { points: [], location: { country: 'IE' } }));
});

test('entityType matches the entity type', (t) => {
  const c = constraint({ type: 'entityType', entityTypes: ['employee', 'datasubject'] });
  t.true(matches(c, data(point('EMAIL', 'x'), { entity: entity('employee') })));
  t.false(matches(c, data(point('EMAIL', 'x'), { entity: entity('vendor') })));
  t.false(matches(c, { points: [] }));
});

/** Entity-value constraint on AGE against a request carrying AGE = value. */
function ageIs(predicate: string, limit: unknown, value: Leaf['value']): boolean {
  const c = constraint({ type: 'user', attribute: 'AGE', predicate, value: limit });
  const age = point('AGE', value);
  const email = point('EMAIL', 'x');
  // Judged on the EMAIL point: the value comes from the request's AGE point.
  return matches(c, { point: email, points: [email, age], entity: entity() });
}

test('entity value: eq and neq compare numbers as numbers and text as text', (t) => {
  t.true(ageIs('eq', '42', 42));
  t.true(ageIs('eq', 42, '42.0'));
  t.false(ageIs('eq', 42, 41));
  t.true(ageIs('neq', 42, 41));
  t.false(ageIs('neq', 42, 42));
  const c = constraint({ type: 'value', attribute: 'STATUS', predicate: 'eq', value: 'active' });
  t.true(matches(c, data(point('STATUS', 'active'))));
  t.false(matches(c, data(point('STATUS', 'Active'))));
});

test('entity value: lt, gt, leq, geq on numbers, at and around the limit', (t) => {
  t.true(ageIs('lt', 13, 12));
  t.false(ageIs('lt', 13, 13));
  t.true(ageIs('gt', 13, 14));
  t.false(ageIs('gt', 13, 13));
  t.true(ageIs('leq', 13, 13));
  t.false(ageIs('leq', 13, 14));
  t.true(ageIs('geq', '13', 13));
  t.false(ageIs('geq', 13, 12));
  t.false(ageIs('lt', 13, 'not a number'));
});

test('entity value: before and after on times', (t) => {
  const born = (predicate: string, limit: string, value: string) => {
    const c = constraint({ type: 'user', attribute: 'BIRTHDATE', predicate, value: limit });
    return matches(c, data(point('BIRTHDATE', value)));
  };
  t.true(born('before', '2010-01-01', '2009-12-31'));
  t.false(born('before', '2010-01-01', '2010-01-02'));
  t.true(born('after', '2010-01-01T00:00:00Z', '2010-01-01T00:00:01+00:00'));
  t.false(born('after', '2010-01-01', '2009-06-01'));
  t.false(born('after', '2010-01-01', 'yesterday'));
});

test('entity value: a time without an offset is compared as UTC, on both sides, whatever the process zone', (t) => {
  const born = (predicate: string, limit: string, value: string) => {
    const c = constraint({ type: 'user', attribute: 'BIRTHDATE', predicate, value: limit });
    return matches(c, data(point('BIRTHDATE', value)));
  };
  const zone = process.env.TZ;
  try {
    for (const tz of ['Asia/Kolkata', 'America/New_York']) {
      process.env.TZ = tz;
      t.true(born('before', '2010-01-01T10:00:00Z', '2010-01-01T09:59:59'), tz);
      t.false(born('before', '2010-01-01T10:00:00Z', '2010-01-01T10:00:01'), tz);
      t.true(born('after', '2010-01-01T10:00:00', '2010-01-01T10:00:01Z'), tz);
      t.false(born('after', '2010-01-01T10:00:00', '2010-01-01T09:00:00+00:00'), tz);
    }
  } finally {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  }
});

test('entity value: in and nin take a comma-separated list', (t) => {
  t.true(ageIs('in', '18, 21,30', 21));
  t.false(ageIs('in', '18,21', 22));
  t.true(ageIs('nin', '18,21', 22));
  t.false(ageIs('nin', '18, 21', 18));
});

test('entity value: only decimal notation is a number; hex, octal and binary spellings are text', (t) => {
  t.false(ageIs('eq', '16', '0x10'));
  t.false(ageIs('eq', 8, '0o10'));
  t.false(ageIs('eq', 2, '0b10'));
  t.true(ageIs('neq', '16', '0x10'));
  t.false(ageIs('gt', 10, '0x10'), '0x10 is no number to compare');
  t.true(ageIs('eq', '1e3', ' 1000 '));
  t.true(ageIs('lt', '.5', '0.25'));
  t.throws(() => parseRule({ key: 'k', constraint: { type: 'user', attribute: 'AGE', predicate: 'lt', value: '0x10' }, action: { type: 'alert' } }), {
    message: 'Entity value constraint value must be a number for predicate lt',
  });
});

test('entity value: in and nin compare numbers as numbers, as eq does', (t) => {
  t.true(ageIs('in', '1.5, 2', '1.50'));
  t.true(ageIs('in', '18,21', '21.0'));
  t.false(ageIs('nin', '18, 21', 18.0));
  t.true(ageIs('nin', '18, 21', '0x12'));
  t.true(ageIs('in', 'a, b', 'b'));
});

test('entity value: regex finds the pattern anywhere in the value', (t) => {
  const c = constraint({ type: 'user', attribute: 'EMAIL', predicate: 'regex', value: '@example\\.(com|org)$' });
  t.true(matches(c, data(point('EMAIL', 'ada@example.org'))));
  t.false(matches(c, data(point('EMAIL', 'ada@example.net'))));
});

test('entity value: no value for the attribute in the request means no match, even for neq', (t) => {
  const c = constraint({ type: 'user', attribute: 'AGE', predicate: 'neq', value: 1 });
  t.false(matches(c, data(point('EMAIL', 'x'))));
});

test('entity value: a structured attribute is read at its sub-attribute', (t) => {
  const c = constraint({ type: 'user', attribute: 'ADDRESS.country', predicate: 'eq', value: 'FR' });
  const address = point('ADDRESS', { country: 'FR', city: 'Paris' }, {
    leaves: [
      { attribute: 'ADDRESS.country', value: 'FR', type: 'string' },
      { attribute: 'ADDRESS.city', value: 'Paris', type: 'string' },
    ],
  });
  t.true(matches(c, data(address)));
  const elsewhere = point('ADDRESS', { country: 'DE' }, { leaves: [{ attribute: 'ADDRESS.country', value: 'DE', type: 'string' }] });
  t.false(matches(c, data(elsewhere)));
});

test('sentiment: a negative threshold catches negative text, a positive one positive text', (t) => {
  const negative = constraint({ type: 'sentiment', threshold: -0.5 });
  t.true(matches(negative, data(point('NOTE', 'I hate this, it is terrible and awful'))));
  t.false(matches(negative, data(point('NOTE', 'The meeting is on Tuesday'))));
  t.false(matches(negative, data(point('NOTE', 'I love it, wonderful'))));
  const positive = constraint({ type: 'sentiment', threshold: 0.5 });
  t.true(matches(positive, data(point('NOTE', 'I love it, wonderful'))));
  t.false(matches(positive, data(point('NOTE', 'I hate this'))));
  const zero = constraint({ type: 'sentiment', threshold: 0 });
  t.true(matches(zero, data(point('NOTE', 'bad'))));
  t.false(matches(zero, data(point('NOTE', 'neutral words only'))));
  t.false(matches(negative, data(point('AGE', 3))), 'numbers carry no sentiment');
});

test('application (activity): any and none over the event application id', (t) => {
  const any = constraint({ type: 'application', operator: 'any', applications: ['crm'] }, 'activity');
  t.true(matches(any, { points: [], applicationId: 'crm' }));
  t.false(matches(any, { points: [], applicationId: 'billing' }));
  const none = constraint({ type: 'application', operator: 'none', applications: ['crm'] }, 'activity');
  t.true(matches(none, { points: [], applicationId: 'billing' }));
  t.false(matches(none, { points: [], applicationId: 'crm' }));
});

test('eventType (activity) matches the listed event types', (t) => {
  const c = constraint({ type: 'eventType', eventTypes: ['READ', 'delete'] }, 'activity');
  t.true(matches(c, { points: [], eventType: 'READ' }));
  t.true(matches(c, { points: [], eventType: 'DELETE' }));
  t.false(matches(c, { points: [], eventType: 'STORE' }));
});

test('all and any combine, nested', (t) => {
  const c = constraint({
    type: 'all',
    constraints: [
      { type: 'attribute', operator: 'any', attributes: ['EMAIL'] },
      { type: 'any', constraints: [{ type: 'tag', operator: 'any', tags: ['pii'] }, { type: 'geolocation', operator: 'any', countries: ['FR'] }] },
    ],
  });
  t.true(matches(c, data(point('EMAIL', 'x', { tags: ['pii'] }))));
  t.true(matches(c, data(point('EMAIL', 'x'), { location: { country: 'FR' } })));
  t.false(matches(c, data(point('EMAIL', 'x'))));
  t.false(matches(c, data(point('PHONE', 'x', { tags: ['pii'] }))));
  t.true(matches(constraint({ type: 'all', constraints: [] }), data(point('X', 'x'))), 'all of nothing holds');
  t.false(matches(constraint({ type: 'any', constraints: [] }), data(point('X', 'x'))), 'any of nothing does not');
});

test('an entity-value constraint reads the request once, not once per point judged', (t) => {
  // Its answer does not depend on the point: asked per point, a store of n values ran the
  // regular expression n² times, and a 1,000-value store held the event loop for minutes.
  const c = constraint({ type: 'user', attribute: 'NOTE', predicate: 'regex', value: 'x$' }) as Extract<Constraint, { type: 'user' }>;
  const regex = c.regex!;
  let runs = 0;
  c.regex = {
    test: (text) => {
      runs++;
      return regex.test(text);
    },
  };
  const points = Array.from({ length: 200 }, (_, i) => point('NOTE', `value ${i}`));
  for (const p of points) t.false(matches(c, { point: p, points, entity: entity() }));
  t.is(runs, 200);
  points.push(point('NOTE', 'ends in x'));
  t.true(matches(c, { point: points[0], points: [...points], entity: entity() }), 'another request is read anew');
});
