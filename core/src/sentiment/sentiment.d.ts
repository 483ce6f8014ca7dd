/** The `sentiment` package ships no types; only what the vault uses is declared. */
declare module 'sentiment' {
  interface AnalysisResult {
    score: number;
    comparative: number;
    tokens: string[];
    words: string[];
    positive: string[];
    negative: string[];
  }
  class Sentiment {
    analyze(phrase: string): AnalysisResult;
  }
  export default Sentiment;
}
