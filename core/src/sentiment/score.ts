/**
 * Offline sentiment of free text, for `sentiment` rule constraints. The `sentiment` package
 * scores words with the AFINN list (-5..5 each) and sums them; the sum is unbounded, so it
 * is squashed into -1..1 the way VADER's compound score is: s / sqrt(s² + 15). One mildly
 * negative word ("bad", -3) scores about -0.61, three strongly negative ones about -0.92.
 */
import Sentiment from 'sentiment';

/** Scoring is linear but not free: a 1 MB value is scored on its first 64 KiB. */
export const MAX_SCORED_LENGTH = 65_536;
const ALPHA = 15;

let analyzer: Sentiment | undefined;

export function sentimentScore(text: string): number {
  analyzer ??= new Sentiment();
  const sample = text.length > MAX_SCORED_LENGTH ? text.slice(0, MAX_SCORED_LENGTH) : text;
  const { score } = analyzer.analyze(sample);
  if (!Number.isFinite(score) || score === 0) return 0;
  return score / Math.sqrt(score * score + ALPHA);
}

/**
 * A threshold's sign says which way it looks: a negative threshold matches text at least
 * that negative (score ≤ threshold), a positive one text at least that positive (score ≥
 * threshold), and 0 any text that leans negative at all (score < 0).
 */
export function meetsThreshold(score: number, threshold: number): boolean {
  if (threshold > 0) return score >= threshold;
  if (threshold < 0) return score <= threshold;
  return score < 0;
}
