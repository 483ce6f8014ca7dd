import test from 'ava';
import { parseIsoDate, withOffset } from './time.js';

test('dates are normalised to UTC and given an explicit offset for data points', (t) => {
  t.is(parseIsoDate('2020-09-03T04:18:54.123+02:00'), '2020-09-03T02:18:54.123Z');
  t.is(withOffset('2020-09-03T02:18:54.123Z'), '2020-09-03T02:18:54.123+00:00');
  t.is(parseIsoDate('yesterday'), undefined);
  t.is(parseIsoDate(12), undefined);
});
