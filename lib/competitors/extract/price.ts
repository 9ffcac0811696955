/** How often a price is paid; `once` for one-time and lifetime deals. */
export type BillingPeriod = "day" | "week" | "month" | "year" | "once";

export interface Price {
  amount: number;
  /** ISO 4217 code, or null when the page gives a bare number. */
  currency: string | null;
  period: BillingPeriod | null;
  /** Charged per user, seat or member. */
  perSeat: boolean;
}

const SYMBOLS: Record<string, string> = {
  $: "USD",
  US$: "USD",
  C$: "CAD",
  CA$: "CAD",
  A$: "AUD",
  AU$: "AUD",
  NZ$: "NZD",
  R$: "BRL",
  "€": "EUR",
  "£": "GBP",
  "¥": "JPY",
  "₹": "INR",
};
const CODES = "USD|EUR|GBP|CAD|AUD|NZD|CHF|JPY|INR|BRL|SEK|NOK|DKK|PLN";
const SYMBOL = "US\\$|CA?\\$|AU?\\$|NZ\\$|R\\$|\\$|€|£|¥|₹";
/**
 * At most five groups of thousands: a price is never larger, and an unbounded run would let a
 * long list of numbers take quadratic time, each group starting a match that runs to its end.
 */
const AMOUNT = "\\d{1,3}(?:[,.\\u00a0 ]\\d{3}){1,5}(?:[.,]\\d{1,2})?|\\d+(?:[.,]\\d{1,2})?";
/** `$29`, `US$ 1,299.00`, `EUR 29`, or a trailing currency: `29 €`, `29,99 EUR`. */
const PRICE = new RegExp(
  `(?:(${SYMBOL}|\\b(?:${CODES}))\\s?(${AMOUNT})|(?<![\\d.,])(${AMOUNT})\\s?(€|£|\\b(?:${CODES})\\b))`,
  "u",
);
const UNIT = "(?:users?|seats?|members?|editors?|agents?|licen[cs]es?)";
const PERIOD_AFTER = new RegExp(
  `^\\s*(?:(?:\\/|per|a|an|each)\\s*)?(${UNIT})?\\s*(?:(?:\\/|per|a|an)\\s*)?(months?|mo|monthly|years?|yr|annum|annually|yearly|weeks?|wk|weekly|days?|daily)\\b`,
  "i",
);
const PERIODS: Array<[RegExp, BillingPeriod]> = [
  [/^(?:months?|mo|monthly)$/i, "month"],
  [/^(?:years?|yr|annum|annually|yearly)$/i, "year"],
  [/^(?:weeks?|wk|weekly)$/i, "week"],
  [/^(?:days?|daily)$/i, "day"],
];

/** `1,299.00` and `1.299,00` are both 1299; `29,99` is 29.99. */
function parseAmount(text: string): number {
  const digits = text.replace(/[\u00a0 ]/g, "");
  const lastSep = Math.max(digits.lastIndexOf(","), digits.lastIndexOf("."));
  if (lastSep === -1) return Number(digits);
  const decimals = digits.length - lastSep - 1;
  const whole = digits.slice(0, lastSep).replace(/[,.]/g, "");
  return decimals === 3
    ? Number(whole + digits.slice(lastSep + 1))
    : Number(`${whole}.${digits.slice(lastSep + 1)}`);
}

/** The period written anywhere in a plan's text, for cards that say it apart from the price. */
function periodIn(text: string): BillingPeriod | null {
  if (/\bone[- ]time\b|\blifetime\b/i.test(text)) return "once";
  if (/\b(?:billed|paid) (?:annually|yearly)\b|\bper year\b/i.test(text)) return "year";
  if (/\bper month\b|\b(?:billed|paid) monthly\b/i.test(text)) return "month";
  return null;
}

/** The first price in a text, with its currency, billing period and whether it is per seat. */
export function findPrice(text: string): Price | undefined {
  const match = PRICE.exec(text);
  if (!match) return undefined;
  const [whole, symbol, amount, trailingAmount, trailingSymbol] = match;
  const code = (symbol ?? trailingSymbol ?? "").toUpperCase();
  const after = text.slice(match.index + whole.length, match.index + whole.length + 40);
  const period = PERIOD_AFTER.exec(after);
  const unit = period?.[2] ?? "";
  return {
    amount: parseAmount(amount ?? trailingAmount ?? "0"),
    currency: SYMBOLS[symbol ?? trailingSymbol ?? ""] ?? (code || null),
    period: PERIODS.find(([pattern]) => pattern.test(unit))?.[1] ?? periodIn(text),
    perSeat:
      Boolean(period?.[1]) || new RegExp(`\\bper ${UNIT}\\b|\\/\\s*${UNIT}\\b`, "i").test(after),
  };
}
