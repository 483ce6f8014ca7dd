/**
 * Admin changes through several vault processes on one database, as an operator scales the
 * vault out: conflicting changes through different processes end in one consistent outcome
 * with the interface's status and message, and a change through one process holds in the
 * others within a second.
 */
import test from 'ava';
import { cluster, type Backend } from '../core/src/testing/cluster.js';

const BACKENDS: Backend[] = ['postgres', 'sqlite'];

for (const backend of BACKENDS) {
  test(`${backend}: a definition saved through one process while another deletes the entity type or regulation it names: never a definition naming what is gone`, async (t) => {
    const c = await cluster(t, backend, 2);
    for (let round = 0; round < 8; round++) {
      const type = `gadget${round}`;
      t.is((await c.call(0, 'POST', '/entitytypes', { key: type, name: 'Gadget' })).status, 201);
      const [deleted, defined] = await Promise.all([c.call(0, 'DELETE', `/entitytypes/${type}`), c.call(1, 'POST', '/attributes', { key: `SERIAL${round}`, entityTypes: [type] })]);
      const answers = JSON.stringify([deleted, defined]);
      if (deleted.status === 200) {
        // The type went first: the definition naming it is refused, and nothing was created.
        t.is(defined.status, 400, answers);
        t.is(defined.body.message, 'No such entity type');
        t.is((await c.call(1, 'GET', `/attributes/SERIAL${round}`)).status, 404, answers);
      } else {
        t.is(deleted.status, 409, answers);
        t.is(deleted.body.message, 'Cannot delete entity type, as there are attributes referencing it');
        t.is(defined.status, 201, answers);
        t.is((await c.call(0, 'GET', `/entitytypes/${type}`)).status, 200);
      }

      const regulation = `HOUSE${round}`;
      t.true((await c.call(0, 'POST', '/regulations', { key: regulation, name: 'House rules' })).status < 300);
      const [dropped, regulated] = await Promise.all([c.call(0, 'DELETE', `/regulations/${regulation}`), c.call(1, 'POST', '/attributes', { key: `RULED${round}`, regulations: [regulation] })]);
      t.is(dropped.status, 200);
      // Either refused, or saved first and untagged by the delete: never left naming it.
      if (regulated.status === 400) t.is(regulated.body.message, 'No such regulation');
      else t.is(regulated.status, 201, JSON.stringify(regulated));
      const definition = await c.call(1, 'GET', `/attributes/RULED${round}`);
      if (definition.status === 200) t.deepEqual(definition.body.data.regulations, [], `round ${round}: the definition names a deleted regulation`);
      else t.is(regulated.status, 400);
    }
  });
}
