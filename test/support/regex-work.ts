/**
 * The work a backtracking regular expression engine does on untrusted text, counted rather than
 * timed, so a test of it passes or fails the same on a fast machine and a loaded one.
 *
 * `regexWork` runs some work with every execution of a regular expression recorded (`exec`,
 * `test`, `match`, `matchAll`, `replace`, `search` and `split` all go through
 * `RegExp.prototype.exec` once it is replaced), with the text, where it started and what V8
 * found. Then each execution is run again by a counting matcher: the expression's own backtracking
 * search, as the standard defines it (each start, each alternative and each repetition tried in
 * order, greedy before lazy), with every step counted. Single characters, classes, anchors and
 * word boundaries are tested by V8 itself (a sticky expression of that piece alone), so Unicode,
 * case folding and the flags mean what they mean to V8; a lookbehind, tested whole by V8 too, must
 * be bounded. The count is V8's work before V8's own shortcuts, which only remove work: where it
 * is linear, V8 is. The matcher must find what V8 found, or the count fails: it never counts a
 * search it models wrongly.
 *
 * V8's own backtrack limit (`%NewRegExpWithBacktrackLimit`) is no such count: a greedy loop gives
 * characters back without counting a backtrack, so `/#*$/` on a run of `#` counts 3 per character
 * while its time grows with the square of the run.
 */

export interface RegexWork<T> {
  result: T;
  /** The steps of every execution, added up; `cap` once past it. */
  steps: number;
  /** The execution during which the steps passed `cap`, if they did. */
  over?: string;
}

/** A part of an expression: what the counting matcher tries, in the standard's order. */
type Node =
  /** One character (a literal, an escape, a class, `.`), tested by V8. */
  | { kind: "char"; source: string }
  /** A zero-width test of V8's: `^`, `$`, `\b`, `\B`, or a whole bounded lookbehind. */
  | { kind: "assert"; source: string }
  | { kind: "ahead"; negate: boolean; body: Node[][] }
  | { kind: "group"; body: Node[][] }
  | { kind: "repeat"; body: Node; min: number; max: number; greedy: boolean };

class Unsupported extends Error {}

/** Reads an expression's source into nodes: alternatives, each a sequence. */
class Parser {
  private at = 0;

  constructor(
    private readonly source: string,
    private readonly unicode: boolean,
    private readonly sets: boolean,
  ) {}

  parse(): Node[][] {
    const body = this.disjunction();
    if (this.at < this.source.length) throw new Unsupported(`an unmatched ) at ${this.at}`);
    return body;
  }

  private disjunction(): Node[][] {
    const alternatives = [this.alternative()];
    while (this.source[this.at] === "|") {
      this.at++;
      alternatives.push(this.alternative());
    }
    return alternatives;
  }

  private alternative(): Node[] {
    const terms: Node[] = [];
    while (this.at < this.source.length && !"|)".includes(this.source[this.at] as string)) {
      const atom = this.atom();
      const quantifier = this.quantifier();
      if (!quantifier) terms.push(atom);
      else if (atom.kind === "assert") throw new Unsupported("a quantified assertion");
      else terms.push({ kind: "repeat", body: atom, ...quantifier });
    }
    return terms;
  }

  private quantifier(): { min: number; max: number; greedy: boolean } | undefined {
    const c = this.source[this.at];
    let min: number;
    let max: number;
    if (c === "*" || c === "+" || c === "?") {
      [min, max] = c === "*" ? [0, Infinity] : c === "+" ? [1, Infinity] : [0, 1];
      this.at++;
    } else if (c === "{") {
      let end = this.at + 1;
      const digits = () => {
        const from = end;
        while (/[0-9]/.test(this.source[end] ?? "")) end++;
        return this.source.slice(from, end);
      };
      const low = digits();
      const comma = this.source[end] === ",";
      if (comma) end++;
      const high = comma ? digits() : low;
      // Not a quantifier: a literal `{` (outside Unicode mode).
      if (!low || this.source[end] !== "}") return undefined;
      [min, max] = [Number(low), high ? Number(high) : Infinity];
      this.at = end + 1;
    } else {
      return undefined;
    }
    const greedy = this.source[this.at] !== "?";
    if (!greedy) this.at++;
    return { min, max, greedy };
  }

  private atom(): Node {
    const start = this.at;
    const c = this.source[this.at] as string;
    if (c === "^" || c === "$") {
      this.at++;
      return { kind: "assert", source: c };
    }
    if (c === "(") return this.group();
    if (c === "[") {
      this.skipClass();
    } else if (c === "\\") {
      const escaped = this.source[this.at + 1] ?? "";
      if (escaped === "b" || escaped === "B") {
        this.at += 2;
        return { kind: "assert", source: `\\${escaped}` };
      }
      if (/[1-9]/.test(escaped) || escaped === "k") throw new Unsupported("a back reference");
      this.skipEscape();
    } else {
      this.at += this.pairAt(this.at) ? 2 : 1;
    }
    return { kind: "char", source: this.source.slice(start, this.at) };
  }

  private group(): Node {
    const start = this.at;
    const rest = this.source.slice(this.at, this.at + 4);
    let kind: "capture" | "plain" | "ahead" | "not-ahead" | "behind" = "capture";
    if (rest.startsWith("(?:")) [kind, this.at] = ["plain", this.at + 3];
    else if (rest.startsWith("(?=")) [kind, this.at] = ["ahead", this.at + 3];
    else if (rest.startsWith("(?!")) [kind, this.at] = ["not-ahead", this.at + 3];
    else if (rest.startsWith("(?<=") || rest.startsWith("(?<!"))
      [kind, this.at] = ["behind", this.at + 4];
    else if (rest.startsWith("(?<")) this.at = this.source.indexOf(">", this.at) + 1;
    else if (rest.startsWith("(?")) throw new Unsupported("a modifier group");
    else this.at++;
    const body = this.disjunction();
    if (this.source[this.at] !== ")") throw new Unsupported(`an unclosed group at ${start}`);
    this.at++;
    if (kind === "behind") {
      if (body.some((sequence) => sequence.some(unbounded))) {
        throw new Unsupported("an unbounded lookbehind");
      }
      return { kind: "assert", source: this.source.slice(start, this.at) };
    }
    if (kind === "ahead" || kind === "not-ahead") {
      return { kind: "ahead", negate: kind === "not-ahead", body };
    }
    return { kind: "group", body };
  }

  /** Past a class, nested ones too with the `v` flag. */
  private skipClass(): void {
    this.at++;
    while (this.at < this.source.length) {
      const c = this.source[this.at];
      if (c === "\\") this.skipEscape();
      else if (c === "[" && this.sets) this.skipClass();
      else if (c === "]") {
        this.at++;
        return;
      } else this.at++;
    }
    throw new Unsupported("an unclosed class");
  }

  private skipEscape(): void {
    const escaped = this.source[this.at + 1] ?? "";
    const hex = (count: number) => /^[0-9a-fA-F]+$/.test(this.source.substr(this.at + 2, count));
    if ((escaped === "p" || escaped === "P") && this.source[this.at + 2] === "{") {
      this.at = this.source.indexOf("}", this.at) + 1;
    } else if (escaped === "u" && this.unicode && this.source[this.at + 2] === "{") {
      this.at = this.source.indexOf("}", this.at) + 1;
    } else if (escaped === "u" && hex(4)) {
      const high = /^[dD][89abAB]/.test(this.source.substr(this.at + 2, 2));
      this.at += 6;
      // In Unicode mode an escaped surrogate pair is one character.
      if (
        high &&
        this.unicode &&
        /^\\u[dD][c-fC-F][0-9a-fA-F]{2}/.test(this.source.slice(this.at))
      ) {
        this.at += 6;
      }
    } else if (escaped === "x" && hex(2)) {
      this.at += 4;
    } else if (escaped === "c" && /[a-zA-Z]/.test(this.source[this.at + 2] ?? "")) {
      this.at += 3;
    } else {
      this.at += this.pairAt(this.at + 1) ? 3 : 2;
    }
  }

  /** Whether a surrogate pair, one character in Unicode mode, starts at `index`. */
  private pairAt(index: number): boolean {
    return this.unicode && isPair(this.source, index);
  }
}

const isPair = (text: string, index: number) =>
  /[\uD800-\uDBFF]/.test(text[index] ?? "") && /[\uDC00-\uDFFF]/.test(text[index + 1] ?? "");

/** Whether a node repeats without bound. */
function unbounded(node: Node): boolean {
  switch (node.kind) {
    case "repeat":
      return node.max === Infinity || unbounded(node.body);
    case "group":
    case "ahead":
      return node.body.some((sequence) => sequence.some(unbounded));
    default:
      return false;
  }
}

/** Whether a node can match the empty string. */
function nullable(node: Node): boolean {
  switch (node.kind) {
    case "char":
      return false;
    case "repeat":
      return node.min === 0 || nullable(node.body);
    case "group":
      return node.body.some((sequence) => sequence.every(nullable));
    default:
      return true;
  }
}

type Inst =
  | { op: "test"; piece: RegExp; width: boolean }
  | { op: "ahead"; body: Inst[]; negate: boolean }
  | { op: "split"; first: number; second: number }
  | { op: "jump"; to: number }
  /** Remembers where an iteration of a repetition that can match empty starts. */
  | { op: "mark"; slot: number }
  /** Fails an iteration that matched empty (the standard's rule, which ends such loops). */
  | { op: "moved"; slot: number }
  | { op: "match" };

/** Pieces as sticky expressions of V8's, by flags and source. */
const pieces = new Map<string, RegExp>();

function piece(source: string, flags: string): RegExp {
  const sticky = `${flags.replace(/[^imsuv]/g, "")}y`;
  const key = `${sticky}/${source}`;
  let regex = pieces.get(key);
  if (!regex) {
    regex = new RegExp(source, sticky);
    pieces.set(key, regex);
  }
  return regex;
}

/** Compiles nodes into a program of the backtracking machine, ending in `match`. */
function compile(body: Node[][], flags: string): Inst[] {
  const program: Inst[] = [];
  let slots = 0;
  const emit = (inst: Inst) => program.push(inst) - 1;
  const split = () => emit({ op: "split", first: 0, second: 0 });
  const patch = (at: number, first: number, second: number) => {
    program[at] = { op: "split", first, second };
  };
  const alternatives = (choices: Node[][]) => {
    const ends: number[] = [];
    choices.forEach((sequence, i) => {
      const last = i === choices.length - 1;
      const fork = last ? -1 : split();
      for (const node of sequence) one(node);
      if (!last) {
        ends.push(emit({ op: "jump", to: 0 }));
        patch(fork, fork + 1, program.length);
      }
    });
    for (const end of ends) program[end] = { op: "jump", to: program.length };
  };
  const iteration = (node: Node) => {
    const empty = nullable(node);
    const slot = slots++;
    if (empty) emit({ op: "mark", slot });
    one(node);
    if (empty) emit({ op: "moved", slot });
  };
  const one = (node: Node): void => {
    switch (node.kind) {
      case "char":
        emit({ op: "test", piece: piece(node.source, flags), width: true });
        return;
      case "assert":
        emit({ op: "test", piece: piece(node.source, flags), width: false });
        return;
      case "ahead":
        emit({ op: "ahead", body: compile(node.body, flags), negate: node.negate });
        return;
      case "group":
        alternatives(node.body);
        return;
      case "repeat": {
        const { body, min, max, greedy } = node;
        if (min > 1000 || (max !== Infinity && max - min > 1000)) {
          throw new Unsupported(`a repetition of {${min},${max}}`);
        }
        for (let i = 0; i < min; i++) one(body);
        if (max === Infinity) {
          const loop = split();
          iteration(body);
          emit({ op: "jump", to: loop });
          const [enter, leave] = [loop + 1, program.length];
          patch(loop, greedy ? enter : leave, greedy ? leave : enter);
          return;
        }
        // Each optional iteration only after the one before it: split, body, split, body, ...
        const forks: number[] = [];
        for (let i = min; i < max; i++) {
          forks.push(split());
          iteration(body);
        }
        const end = program.length;
        for (const fork of forks) patch(fork, greedy ? fork + 1 : end, greedy ? end : fork + 1);
        return;
      }
    }
  };
  alternatives(body);
  emit({ op: "match" });
  return program;
}

class OverCap extends Error {}

/** Counts steps: one per instruction run and per backtrack taken. */
interface Meter {
  steps: number;
  cap: number;
}

/** Runs a program from `start`; where the match ends, or -1. */
function run(program: Inst[], text: string, start: number, meter: Meter): number {
  // Pairs: (instruction, position) to go back to, or (-1 - slot, its value before) to restore.
  const stack: number[] = [];
  const slots: number[] = [];
  let pc = 0;
  let at = start;
  for (;;) {
    if (++meter.steps > meter.cap) throw new OverCap();
    const inst = program[pc] as Inst;
    let failed = false;
    switch (inst.op) {
      case "test":
        inst.piece.lastIndex = at;
        if (inst.piece.test(text)) {
          if (inst.width) at = inst.piece.lastIndex;
          pc++;
        } else {
          failed = true;
        }
        break;
      case "ahead":
        if (run(inst.body, text, at, meter) >= 0 !== inst.negate) pc++;
        else failed = true;
        break;
      case "split":
        stack.push(inst.second, at);
        pc = inst.first;
        break;
      case "jump":
        pc = inst.to;
        break;
      case "mark":
        stack.push(-1 - inst.slot, slots[inst.slot] ?? -1);
        slots[inst.slot] = at;
        pc++;
        break;
      case "moved":
        if (slots[inst.slot] === at) failed = true;
        else pc++;
        break;
      case "match":
        return at;
    }
    while (failed) {
      if (stack.length === 0) return -1;
      const value = stack.pop() as number;
      const to = stack.pop() as number;
      if (to < 0) {
        slots[-1 - to] = value;
        continue;
      }
      [pc, at, failed] = [to, value, false];
      if (++meter.steps > meter.cap) throw new OverCap();
    }
  }
}

interface Exec {
  source: string;
  flags: string;
  text: string;
  /** Where the execution starts: `lastIndex` for a global or sticky expression, else 0. */
  start: number;
  /** What V8 found: where the match starts and ends. */
  found: [number, number] | undefined;
}

/** Programs by flags and source. */
const programs = new Map<string, Inst[]>();

/** Searches as `exec` does, counting; where the match starts and ends. */
function search(exec: Exec, meter: Meter): [number, number] | undefined {
  const { source, flags, text } = exec;
  const key = `${flags}/${source}`;
  let program = programs.get(key);
  if (!program) {
    const unicode = /[uv]/.test(flags);
    program = compile(new Parser(source, unicode, flags.includes("v")).parse(), flags);
    programs.set(key, program);
  }
  for (let at = exec.start; at <= text.length; ) {
    const end = run(program, text, at, meter);
    if (end >= 0) return [at, end];
    if (flags.includes("y")) return undefined;
    at += /[uv]/.test(flags) && isPair(text, at) ? 2 : 1;
  }
  return undefined;
}

/**
 * Runs `work` and counts the steps of every regular expression execution it makes, up to `cap`
 * in all.
 */
export function regexWork<T>(work: () => T, cap: number): RegexWork<T> {
  const execs: Exec[] = [];
  const exec = RegExp.prototype.exec;
  RegExp.prototype.exec = function (this: RegExp, input: string) {
    const start = this.global || this.sticky ? this.lastIndex : 0;
    const match = exec.call(this, input);
    const found: Exec["found"] = match ? [match.index, match.index + match[0].length] : undefined;
    execs.push({ source: this.source, flags: this.flags, text: String(input), start, found });
    return match;
  };
  let result: T;
  try {
    result = work();
  } finally {
    RegExp.prototype.exec = exec;
  }
  const meter: Meter = { steps: 0, cap };
  for (const e of execs) {
    const where = `/${e.source}/${e.flags} from ${e.start} of ${e.text.length} characters`;
    let found: [number, number] | undefined;
    try {
      found = search(e, meter);
    } catch (error) {
      if (error instanceof OverCap) return { result, steps: cap, over: where };
      if (error instanceof Unsupported) {
        throw new Error(`The counting matcher does not read ${error.message}: ${where}`);
      }
      throw error;
    }
    if (String(found) !== String(e.found)) {
      throw new Error(
        `The counting matcher found [${found}] where V8 found [${e.found}]: ${where}`,
      );
    }
  }
  return { result, steps: meter.steps };
}
