import test from 'ava';
import { isPublicAddress, locate } from './locate.js';

test('public addresses resolve offline to country and ISO 3166-2 subdivision', (t) => {
  const gb = locate('81.2.69.142');
  t.is(gb?.country, 'GB');
  t.is(gb?.subdivision, 'GB-ENG');
  t.is(locate('::ffff:81.2.69.142')?.country, 'GB');
});

test('explicit origin codes are taken as written', (t) => {
  t.deepEqual(locate('us-ca'), { country: 'US', subdivision: 'US-CA' });
  t.deepEqual(locate('DE'), { country: 'DE' });
});

test('private and loopback addresses, and garbage, have no location', (t) => {
  t.is(locate('127.0.0.1'), undefined);
  t.is(locate('192.168.1.4'), undefined);
  t.is(locate('::1'), undefined);
  t.is(locate('not an address'), undefined);
  t.is(locate(undefined), undefined);
  t.false(isPublicAddress('10.1.2.3'));
  t.true(isPublicAddress('8.8.8.8'));
});
