/**
 * The rule body as the OpenAPI document shows it. It is documentation only (marked
 * `x-vault-unchecked`, which the validator compiler skips): the rule parser checks rules
 * itself so that a bad rule is answered with the interface's own messages (`Cannot parse
 * JSON of rule`, `Rule key is required`, ...) rather than with a schema validator's.
 */
import { ALERT_LEVELS, EVENT_TYPES, PREDICATES } from './model.js';

const names = (description: string) => ({ type: 'array', items: { type: 'string' }, maxItems: 1000, description }) as const;
const listOperator = (values: string[]) => ({ type: 'string', enum: values, description: 'Case-insensitive.' }) as const;

function variant(type: string | string[], properties: Record<string, unknown>, required: string[], description: string) {
  return {
    type: 'object',
    description,
    required: ['type', ...required],
    properties: { type: { type: 'string', enum: Array.isArray(type) ? type : [type] }, ...properties },
  };
}

const constraint = {
  description: 'A constraint: its `type` selects the members it takes. `all` and `any` nest up to 16 deep.',
  oneOf: [
    variant(['all', 'any'], { constraints: { type: 'array', items: { type: 'object', description: 'A constraint' } } }, ['constraints'], 'Every, or any, of the constraints holds.'),
    variant('attribute', { operator: listOperator(['any', 'none']), attributes: names('Attribute keys; `KEY.sub` names a sub-attribute.') }, ['operator', 'attributes'], 'Data and activity rules.'),
    variant('tag', { operator: listOperator(['any', 'all', 'none']), tags: names('Tags of the point, its definition and its entity.') }, ['operator', 'tags'], 'Data rules.'),
    variant('regulation', { operator: listOperator(['any', 'all', 'none']), regulations: names('Regulation keys.') }, ['operator', 'regulations'], 'Data rules.'),
    variant(
      ['geolocation', 'geo'],
      { operator: listOperator(['any', 'none']), countries: names('ISO 3166-1 alpha-2 codes.'), subdivisions: names('ISO 3166-2 codes such as `US-CA`.') },
      ['operator'],
      'Data and activity rules; at least one country or subdivision.',
    ),
    variant('entityType', { entityTypes: names('Entity type keys.') }, ['entityTypes'], 'Data rules.'),
    variant(
      ['user', 'value'],
      { attribute: { type: 'string' }, predicate: { type: 'string', enum: [...PREDICATES], default: 'eq' }, value: { oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] } },
      ['attribute', 'value'],
      'A value of the request being stored (data rules).',
    ),
    variant('sentiment', { threshold: { type: 'number', minimum: -1, maximum: 1 } }, ['threshold'], 'Text sentiment (data rules).'),
    variant('application', { operator: listOperator(['any', 'none']), applications: names('The event’s `applicationId`.') }, ['operator', 'applications'], 'Activity rules.'),
    variant('eventType', { eventTypes: { type: 'array', items: { type: 'string', enum: [...EVENT_TYPES] } } }, ['eventTypes'], 'Activity rules.'),
  ],
};

const action = {
  description: 'What the rule does when its constraint holds.',
  oneOf: [
    variant('alert', { alertLevel: { type: 'string', enum: [...ALERT_LEVELS], default: 'NORMAL' }, message: { type: 'string', maxLength: 4096 } }, [], 'Raise an alert.'),
    variant('tag', { tag: { type: 'string' }, status: { type: 'boolean', default: true } }, ['tag'], 'Tag the matching points (false: untag).'),
    variant('regulation', { regulation: { type: 'string' } }, ['regulation'], 'Add a regulation to the matching points (data rules).'),
    variant('entityTag', { tag: { type: 'string' }, status: { type: 'boolean', default: true } }, ['tag'], 'Tag the entity (false: untag).'),
    variant('block', { message: { type: 'string', maxLength: 4096 } }, [], 'Refuse the store or event with 403.'),
    variant(
      'prohibition',
      { prohibitions: { type: 'array', items: { type: 'string', enum: [...EVENT_TYPES] } }, status: { type: 'boolean', default: true } },
      ['prohibitions'],
      'Later operations of these kinds on the entity answer 403.',
    ),
    variant('legalHold', { status: { type: 'boolean', default: true } }, [], 'Put the entity under legal hold (false: lift it).'),
    variant(
      'retention',
      {
        expirationDate: { type: 'string', format: 'date-time' },
        daysSinceStore: { type: 'integer', minimum: 0 },
        daysSinceRead: { type: 'integer', minimum: 0 },
        daysSinceAccess: { type: 'integer', minimum: 0, description: 'Alias of daysSinceRead.' },
        autoDelete: { type: 'boolean', default: false },
      },
      [],
      'Expiry and deletion of the matching points (data rules).',
    ),
  ],
};

export const ruleRequestBody = {
  'x-vault-unchecked': true,
  type: 'object',
  required: ['key', 'constraint', 'action'],
  description: 'Checked by the vault, which answers each problem with a 400 naming it (or 422 for a name that does not exist); see the README, "Rules and alerts".',
  properties: {
    key: { type: 'string', maxLength: 256 },
    name: { type: 'string', maxLength: 256, nullable: true },
    type: { type: 'string', enum: ['data', 'activity'], default: 'data' },
    constraint,
    action,
    executionOrder: { type: 'integer', description: 'Default: one more than the highest.' },
  },
};
