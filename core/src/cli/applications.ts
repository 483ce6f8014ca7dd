/** `vault applications ...`: the applications that call the vault, and their API keys. */
import { CLI_ACTOR, splitList, withVault, type Command } from './command.js';
import { apiKeyOption, UsageError } from './secret.js';
import { MAX_KEEP_PREVIOUS_SECONDS } from '../applications/service.js';
import { escapeControlCharacters } from '../util/characters.js';

/** A key the operator chose is not printed back: it is where they keep it, and output ends up in logs. */
const shown = (apiKey: string, given: string | undefined) => (given === undefined ? `API key (shown once): ${apiKey}` : 'API key: the one given');

export const applicationCommands: Record<string, Command> = {
  'applications create': {
    summary: 'Create an application and print its API key once',
    usage: 'vault applications create --name NAME [--attributes A,B|*] [--admin] [--api-key-file FILE|-]  (a key of your own; --api-key KEY also works, but shows it to every local user in ps)',
    options: {
      name: { type: 'string' },
      attributes: { type: 'string', default: '*' },
      admin: { type: 'boolean', default: false },
      'api-key': { type: 'string' },
      'api-key-file': { type: 'string' },
    },
    async run({ values }, io) {
      if (!values.name) {
        io.err('--name is required');
        return 2;
      }
      const given = await apiKeyOption(values, io);
      const { application, apiKey } = await withVault(io, (vault) =>
        vault.applications.create(CLI_ACTOR, {
          name: String(values.name),
          attributes: splitList(String(values.attributes)),
          admin: Boolean(values.admin),
          apiKey: given,
        }),
      );
      io.out(`Created application ${application.id} (${escapeControlCharacters(application.name)}). ${shown(apiKey, given)}`);
      return 0;
    },
  },

  'applications list': {
    summary: 'List applications',
    usage: 'vault applications list',
    async run(_args, io) {
      const apps = await withVault(io, (vault) => vault.applications.list());
      for (const a of apps) io.out(`${a.id}\t${escapeControlCharacters(a.name)}\t${a.admin ? 'admin' : '-'}\t${a.attributes.join(',')}`);
      return 0;
    },
  },

  'applications update': {
    summary: 'Change an application in place (its id, key and history stay)',
    usage: 'vault applications update ID [--name NAME] [--attributes A,B|*] [--admin | --no-admin]',
    positionals: 1,
    options: { name: { type: 'string' }, attributes: { type: 'string' }, admin: { type: 'boolean' }, 'no-admin': { type: 'boolean' } },
    async run({ values, positionals }, io) {
      const id = positionals[0];
      if (!id) {
        io.err('the application id is required');
        return 2;
      }
      if (values.admin && values['no-admin']) {
        io.err('give --admin or --no-admin, not both');
        return 2;
      }
      const changes = {
        ...(values.name === undefined ? {} : { name: String(values.name) }),
        ...(values.attributes === undefined ? {} : { attributes: splitList(String(values.attributes)) }),
        ...(values.admin ? { admin: true } : values['no-admin'] ? { admin: false } : {}),
      };
      if (Object.keys(changes).length === 0) {
        io.err('nothing to change: give --name, --attributes, --admin or --no-admin');
        return 2;
      }
      const application = await withVault(io, (vault) => vault.applications.update(CLI_ACTOR, id, changes));
      io.out(`Updated application ${application.id}\t${escapeControlCharacters(application.name)}\t${application.admin ? 'admin' : '-'}\t${application.attributes.join(',')}`);
      return 0;
    },
  },

  'applications roll-key': {
    summary: "Give an application a new API key, printed once; the old one stops, or stays valid for --keep-previous seconds",
    usage: 'vault applications roll-key ID [--keep-previous SECONDS] [--api-key-file FILE|-]  (a key of your own; --api-key KEY also works, but shows it to every local user in ps)',
    positionals: 1,
    options: { 'keep-previous': { type: 'string', default: '0' }, 'api-key': { type: 'string' }, 'api-key-file': { type: 'string' } },
    async run({ values, positionals }, io) {
      const id = positionals[0];
      if (!id) {
        io.err('the application id is required');
        return 2;
      }
      const keep = String(values['keep-previous']);
      // The service's own message names the API's field, keepPreviousForSeconds.
      if (!/^\d+$/.test(keep) || Number(keep) > MAX_KEEP_PREVIOUS_SECONDS) {
        throw new UsageError(`--keep-previous must be a whole number of seconds from 0 to ${MAX_KEEP_PREVIOUS_SECONDS} (30 days)`);
      }
      const given = await apiKeyOption(values, io);
      const { application, apiKey } = await withVault(io, (vault) =>
        vault.applications.rollKey(CLI_ACTOR, id, { keepPreviousForSeconds: Number(keep), apiKey: given }),
      );
      const previous = application.previousKeyValidUntil ? `; the previous key is valid until ${application.previousKeyValidUntil}` : '; the previous key no longer works';
      io.out(`Rolled the key of application ${application.id} (${escapeControlCharacters(application.name)}). ${shown(apiKey, given)}${previous}`);
      return 0;
    },
  },

  'applications delete': {
    summary: 'Delete an application (its key stops working at once)',
    usage: 'vault applications delete ID',
    positionals: 1,
    async run({ positionals }, io) {
      const id = positionals[0];
      if (!id) {
        io.err('the application id is required');
        return 2;
      }
      await withVault(io, (vault) => vault.applications.delete(CLI_ACTOR, id));
      io.out(`Deleted application ${id}`);
      return 0;
    },
  },
};
