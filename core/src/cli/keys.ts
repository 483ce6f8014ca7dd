/** `vault keygen` and `vault keys ...`: the vault's RSA key pairs, and their rotation. */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { generateKeyPair, INVALID_KEY, keyFingerprint, MIN_KEY_BITS, parsePublicKeyHeader } from '../crypto/keys.js';
import { isVaultError } from '../errors.js';
import { CLI_ACTOR, withVault, type Command } from './command.js';

export const keyCommands: Record<string, Command> = {
  keygen: {
    summary: 'Generate an RSA key pair in the vault header format',
    usage: 'vault keygen [--bits 3072] [--out DIR]',
    options: { bits: { type: 'string', default: '3072' }, out: { type: 'string' } },
    async run({ values }, io) {
      const bits = Number(values.bits);
      if (![2048, 3072, 4096].includes(bits)) {
        io.err('--bits must be 2048, 3072 or 4096');
        return 2;
      }
      const dir = values.out ? resolve(String(values.out)) : undefined;
      if (dir && statSync(dir, { throwIfNoEntry: false })?.isDirectory() === false) {
        io.err(`--out names a file (${dir}): give the directory to write the key pair in`);
        return 2;
      }
      // The key there may be the one data is already sealed under; and a file's mode is only
      // set on creation, so a new private key would have taken an old file's 0644.
      const taken = dir && [join(dir, 'private-key.pem'), join(dir, 'public-key.pem')].find((file) => existsSync(file));
      if (taken) {
        io.err(`${taken} already exists: keygen writes a new pair only where there is none (nothing was written)`);
        return 2;
      }
      const pair = generateKeyPair(bits);
      if (dir) {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        writeFileSync(join(dir, 'private-key.pem'), pair.privatePem, { mode: 0o600, flag: 'wx' });
        writeFileSync(join(dir, 'public-key.pem'), pair.publicPem, { flag: 'wx' });
        io.out(`Wrote ${join(dir, 'private-key.pem')} (mode 0600) and ${join(dir, 'public-key.pem')}`);
      } else {
        io.err('No --out given: printing the private key header to stdout. Keep it secret.');
        io.out(`X-Decryption-Key: ${pair.privateKey}`);
      }
      io.out(`VAULT_ENCRYPTION_PUBLIC_KEY=${pair.publicKey}`);
      return 0;
    },
  },

  'keys list': {
    summary: "List the vault's registered encryption keys",
    usage: 'vault keys list',
    async run(_args, io) {
      const keys = await withVault(io, (vault) => vault.keyring.list());
      for (const k of keys) io.out(`${k.id}\t${k.status}`);
      return 0;
    },
  },

  'keys register': {
    summary: 'Register a new public key as the active one (new data keys are wrapped under it)',
    usage: 'vault keys register --public-key FILE',
    options: { 'public-key': { type: 'string' } },
    async run({ values }, io) {
      const file = values['public-key'];
      if (!file || !existsSync(String(file))) {
        io.err('--public-key must name a PEM public key file');
        return 2;
      }
      const path = resolve(String(file));
      if (statSync(path).isDirectory()) {
        io.err(`--public-key: ${path} is a directory: name the public key file in it (public-key.pem)`);
        return 2;
      }
      const pem = readFileSync(path, 'utf8');
      // The request's own message ("Encoded key provided is invalid") names neither the option nor the file.
      if (pem.includes('PRIVATE KEY')) throw new Error(`--public-key: ${path} is a private key: register the public half (public-key.pem), never the private one`);
      const publicKey = asKeyFile(() => parsePublicKeyHeader(pem), `--public-key: ${path} is not a PEM RSA public key`);
      const bits = publicKey.asymmetricKeyDetails?.modulusLength ?? 0;
      if (bits < MIN_KEY_BITS) throw new Error(`--public-key: ${path} is a ${bits}-bit RSA key: register one of at least ${MIN_KEY_BITS} bits (vault keygen makes them)`);
      // "The previous key stays readable" would be wrong: there is none, and nothing changes.
      const key = await withVault(io, async (vault) => ((await vault.keyring.active())?.id === keyFingerprint(publicKey) ? undefined : vault.keyRotation.register(publicKey, CLI_ACTOR)));
      if (!key) {
        io.out(`${keyFingerprint(publicKey)} is the active key already: nothing changed.`);
        return 0;
      }
      io.out(`Registered ${key.id} as the active key. The previous key stays readable until retired.`);
      return 0;
    },
  },

  'keys rewrap': {
    summary: 'Give every data key under an old key a copy under the active key (the vault keeps serving)',
    usage: 'vault keys rewrap --old-private-key FILE',
    options: { 'old-private-key': { type: 'string' } },
    async run({ values }, io) {
      const file = values['old-private-key'];
      if (!file || !existsSync(String(file))) {
        io.err('--old-private-key must name the PEM private key of the key being replaced');
        return 2;
      }
      const path = resolve(String(file));
      if (statSync(path).isDirectory()) {
        io.err(`--old-private-key: ${path} is a directory: name the private key file in it`);
        return 2;
      }
      const oldPrivateKey = Buffer.from(readFileSync(path)).toString('base64');
      const unknown = `--old-private-key: ${path} is not the PEM private key of a key registered with this vault (see vault keys list; a retired key's private key opens nothing)`;
      const count = await withVault(io, async (vault) => {
        // Only the key's own check: a data key failing to open under a registered key is another matter.
        await asKeyFile(() => vault.keyring.requireDecryptionKey(oldPrivateKey), unknown);
        return vault.keyRotation.rewrap(oldPrivateKey, CLI_ACTOR);
      });
      io.out(`Re-wrapped ${count} data keys under the active key. Both private keys read everything until the old key is retired.`);
      return 0;
    },
  },

  'keys retire': {
    summary: "Destroy an old key's wrapped copies and unregister it (after rewrap)",
    usage: 'vault keys retire --key-id ID',
    options: { 'key-id': { type: 'string' } },
    async run({ values }, io) {
      const id = values['key-id'];
      if (!id) {
        io.err('--key-id is required (see vault keys list)');
        return 2;
      }
      const moved = await withVault(io, (vault) => vault.keyRotation.retire(String(id), CLI_ACTOR));
      io.out(`Retired ${id}: ${moved} data keys now rest on the active key alone. Destroy the old private key.`);
      return 0;
    },
  },
};

/** Runs `use`, saying `message` instead of the request's invalid-key answer, whose words fit a header. */
function asKeyFile<T>(use: () => T, message: string): T {
  const refused = (err: unknown) => {
    throw isVaultError(err) && err.message === INVALID_KEY ? new Error(message) : err;
  };
  try {
    const result = use();
    return (result instanceof Promise ? result.catch(refused) : result) as T;
  } catch (err) {
    return refused(err);
  }
}
