import test from 'ava';
import { parseIsoDate, parseIsoMs, startsWithCalendarDate, withOffset } from './time.js';

test('dates are normalised to UTC and given an explicit offset for data points', (t) => {
  t.is(parseIsoDate('2020-09-03T04:18:54.123+02:00'), '2020-09-03T02:18:54.123Z');
  t.is(withOffset('2020-09-03T02:18:54.123Z'), '2020-09-03T02:18:54.123+00:00');
  t.is(parseIsoDate('yesterday'), undefined);
  t.is(parseIsoDate(12), undefined);
});

test('a date that names no day of the calendar is no date, rather than the day Date.parse rolls it over to', (t) => {
  for (const day of ['2023-02-29', '2024-02-30', '2024-04-31', '2024-13-01', '2024-00-10', '2024-01-00', '1900-02-29']) {
    t.false(startsWithCalendarDate(day), day);
    t.is(parseIsoDate(`${day}T00:00:00Z`), undefined, day);
  }
  for (const day of ['2024-02-29', '2000-02-29', '2023-12-31', '2024-04-30']) t.true(startsWithCalendarDate(day), day);
  t.is(parseIsoDate('2024-02-29T23:59:59.999-01:00'), '2024-03-01T00:59:59.999Z');
});

test('a date-time without an offset is UTC, whatever time zone the process runs in', (t) => {
  // Date.parse reads such a time in the process's zone, so two vault processes in different
  // zones (or one restarted with another TZ) would record one input as two instants.
  const zone = process.env.TZ;
  try {
    for (const tz of ['Asia/Kolkata', 'America/New_York', 'UTC']) {
      process.env.TZ = tz;
      t.is(parseIsoDate('2024-01-02T10:00:00'), '2024-01-02T10:00:00.000Z', tz);
      t.is(parseIsoDate('2024-01-02T10:00:00.250'), '2024-01-02T10:00:00.250Z', tz);
      t.is(parseIsoDate('2024-01-02T10:00'), '2024-01-02T10:00:00.000Z', tz);
      t.is(parseIsoDate('2024-01-02 10:00:00'), '2024-01-02T10:00:00.000Z', tz);
      t.is(parseIsoDate('2024-01-02'), '2024-01-02T00:00:00.000Z', tz);
      t.is(parseIsoDate('2024-01-02T10:00:00+02:00'), '2024-01-02T08:00:00.000Z', tz);
      t.is(parseIsoDate('2024-01-02T10:00:00z'), '2024-01-02T10:00:00.000Z', tz);
      t.is(parseIsoMs('2024-01-02T10:00:00'), Date.UTC(2024, 0, 2, 10), tz);
    }
  } finally {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  }
});
