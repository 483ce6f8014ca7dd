/**
 * The vault's resources as they travel over the wire: the interface document's fields,
 * completed by decisions.md where the interface says "not shown".
 */
export * from './types/common.js';
export * from './types/data.js';
export * from './types/registry.js';
export * from './types/rules.js';
export * from './types/activity.js';
export * from './types/applications.js';
