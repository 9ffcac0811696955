import { all, attr, type Element, type HtmlPage, isInside, parentOf, tag, textOf } from "./html.js";
import { type BillingPeriod, findPrice } from "./price.js";

/** One plan of a pricing page. A plan without a public price has `contactSales: true`. */
export interface Plan {
  name: string;
  price: number | null;
  currency: string | null;
  period: BillingPeriod | null;
  perSeat: boolean;
  contactSales: boolean;
}

const isHeading = tag("h2", "h3", "h4", "h5");
const isLabel = tag("a", "button", "span", "p", "div", "strong", "b", "em");
const NAME_CLASS = /(?:plan|tier|package|pricing)[-_]?(?:name|title)/i;
/** Text of a call to action or price label that stands for "no public price". */
const CONTACT =
  /^(?:contact(?: our)? (?:sales(?: team)?|us|team)(?: for (?:pricing|a quote))?|(?:talk|speak) to (?:sales|us|our team|an expert)|get (?:a )?quote|get in touch|request (?:a )?(?:quote|demo|pricing)|book a (?:demo|call)|custom(?: pricing| quote| plan)?|let'?s talk|call us|on request|price on request)(?: today| now)?$/i;
/** A label as read: arrows, icons and punctuation around the words dropped ("Talk to sales →"). */
const labelText = (el: Element) =>
  textOf(el)
    .replace(/[^\p{L}\p{N}' ]+/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
const FREE = /^free\b|\bfree forever\b/i;
/** Cards are small; an ancestor holding more than this much text is the page, not a card. */
const MAX_CARD_TEXT = 2000;
const MAX_CLIMB = 6;

/** Whitespace is collapsed first: `/\s+plan$/` would take quadratic time on a long run of it. */
export const planKey = (name: string) =>
  name
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/ plan$/, "")
    .trim();

function isPlanHeading(el: Element): boolean {
  if (!isHeading(el) && !NAME_CLASS.test(attr(el, "class"))) return false;
  const name = textOf(el);
  // Questions are FAQ entries, long headings are prose; neither names a plan.
  return name.length > 0 && name.length <= 40 && !name.endsWith("?");
}

function hasContactLabel(card: Element): boolean {
  return all(card, isLabel).some((el) => CONTACT.test(labelText(el)));
}

/** The plan a card describes, or undefined when the element is no plan card. */
function readCard(name: string, card: Element): Plan | undefined {
  const text = textOf(card);
  const price = findPrice(text);
  if (price) {
    return {
      name,
      price: price.amount,
      currency: price.currency,
      period: price.amount === 0 ? null : price.period,
      perSeat: price.perSeat,
      contactSales: false,
    };
  }
  if (hasContactLabel(card)) {
    return { name, price: null, currency: null, period: null, perSeat: false, contactSales: true };
  }
  if (FREE.test(name) || FREE.test(text.slice(name.length).trim())) {
    return { name, price: 0, currency: null, period: null, perSeat: false, contactSales: false };
  }
  return undefined;
}

/**
 * The plans of a pricing page. A plan card is the smallest ancestor of a plan-name heading that
 * shows a price (or a contact-sales label) without holding a second heading of the same kind; when
 * cards sit in a shared container, lone cards elsewhere (an FAQ that quotes a price) are dropped.
 */
export function extractPlans(page: HtmlPage): Plan[] {
  const headings = all(page.root, isPlanHeading);
  const found: Array<{ plan: Plan; container: Element | null }> = [];
  for (const heading of headings) {
    const peers = headings.filter((h) => h !== heading && h.name === heading.name);
    let el = parentOf(heading);
    for (let depth = 0; el && depth < MAX_CLIMB; depth++, el = parentOf(el)) {
      const ancestor = el;
      if (peers.some((peer) => isInside(peer, ancestor))) break;
      if (textOf(el).length > MAX_CARD_TEXT) break;
      const plan = readCard(textOf(heading), el);
      if (plan) {
        found.push({ plan, container: parentOf(el) });
        break;
      }
    }
  }
  const counts = new Map<Element | null, number>();
  for (const { container } of found) counts.set(container, (counts.get(container) ?? 0) + 1);
  const grouped = found.filter(({ container }) => (counts.get(container) ?? 0) > 1);
  const plans = new Map<string, Plan>();
  for (const { plan } of grouped.length > 0 ? grouped : found) {
    if (!plans.has(planKey(plan.name))) plans.set(planKey(plan.name), plan);
  }
  return [...plans.values()];
}
