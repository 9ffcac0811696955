/**
 * The floor of figure 5: BM25 computed by hand with no index at all. Each query scans every token
 * of every chunk, so its time is the cost of looking at everything once: an index is worth its
 * keep where it answers faster than this.
 */

/** Words as runs of letters, marks and digits, lower-cased (the corpus is ASCII, so these are
 * the same words `tokenize` finds; it is the cheapest correct split, used only for the floor). */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{M}\p{N}]+/gu) ?? [];
}

const K1 = 1.2;
const B = 0.75;

export interface Hit {
  chunk: number;
  score: number;
}

export class BruteForceBm25 {
  private readonly termIds = new Map<string, number>();
  /** Every chunk's tokens as term ids, back to back; chunk i is `tokens[starts[i]..starts[i+1]]`. */
  private readonly tokens: Int32Array;
  private readonly starts: Int32Array;
  private readonly averageLength: number;

  constructor(texts: readonly string[]) {
    const ids: number[] = [];
    this.starts = new Int32Array(texts.length + 1);
    texts.forEach((text, i) => {
      for (const word of words(text)) {
        let id = this.termIds.get(word);
        if (id === undefined) {
          id = this.termIds.size;
          this.termIds.set(word, id);
        }
        ids.push(id);
      }
      this.starts[i + 1] = ids.length;
    });
    this.tokens = Int32Array.from(ids);
    this.averageLength = ids.length / Math.max(1, texts.length);
  }

  search(query: string, limit: number): Hit[] {
    const terms = [...new Set(words(query))].flatMap((w) => {
      const id = this.termIds.get(w);
      return id === undefined ? [] : [id];
    });
    const chunks = this.starts.length - 1;
    if (terms.length === 0 || chunks === 0) return [];
    // One pass over everything: per chunk, how often each query term occurs in it.
    const slotOf = new Int16Array(this.termIds.size).fill(-1);
    terms.forEach((id, slot) => {
      slotOf[id] = slot;
    });
    const matched: Array<{ chunk: number; length: number; tf: number[] }> = [];
    const df = new Array<number>(terms.length).fill(0);
    for (let chunk = 0; chunk < chunks; chunk++) {
      const start = this.starts[chunk] as number;
      const end = this.starts[chunk + 1] as number;
      let tf: number[] | undefined;
      for (let at = start; at < end; at++) {
        const slot = slotOf[this.tokens[at] as number] as number;
        if (slot < 0) continue;
        tf ??= new Array<number>(terms.length).fill(0);
        tf[slot] = (tf[slot] as number) + 1;
      }
      if (!tf) continue;
      tf.forEach((count, slot) => {
        if (count > 0) df[slot] = (df[slot] as number) + 1;
      });
      matched.push({ chunk, length: end - start, tf });
    }
    const idf = df.map((n) => Math.log(1 + (chunks - n + 0.5) / (n + 0.5)));
    const hits = matched.map(({ chunk, length, tf }) => {
      const norm = K1 * (1 - B + (B * length) / this.averageLength);
      const score = tf.reduce(
        (sum, count, slot) => sum + ((idf[slot] as number) * count * (K1 + 1)) / (count + norm),
        0,
      );
      return { chunk, score };
    });
    return hits.sort((a, b) => b.score - a.score).slice(0, limit);
  }
}
