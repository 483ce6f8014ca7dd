import test from 'ava';
import { MAX_SCORED_LENGTH, meetsThreshold, sentimentScore } from './score.js';

test('scores stay within -1..1 and follow the words', (t) => {
  t.is(sentimentScore('The meeting is on Tuesday'), 0);
  const bad = sentimentScore('bad');
  t.true(bad < -0.5 && bad > -0.7, `one negative word: ${bad}`);
  const worse = sentimentScore('terrible awful horrible disgusting');
  t.true(worse < bad && worse >= -1, `more negative words: ${worse}`);
  t.true(sentimentScore('I love this, it is wonderful and great') > 0.8);
  t.true(sentimentScore('hate '.repeat(10_000)) >= -1);
});

test('the threshold’s sign says which way it looks', (t) => {
  t.true(meetsThreshold(-0.6, -0.5));
  t.false(meetsThreshold(-0.4, -0.5));
  t.true(meetsThreshold(0.6, 0.5));
  t.false(meetsThreshold(0.4, 0.5));
  t.true(meetsThreshold(-0.01, 0));
  t.false(meetsThreshold(0, 0));
  t.false(meetsThreshold(0.3, 0));
});

test('a huge value is scored on its start, quickly', (t) => {
  const text = `${'table '.repeat(MAX_SCORED_LENGTH / 6 + 1)}${'hate '.repeat(100_000)}`;
  const started = Date.now();
  t.is(sentimentScore(text), 0, 'the negative tail is beyond the scored window');
  t.true(Date.now() - started < 2_000);
});
