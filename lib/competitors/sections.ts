/**
 * The parts of a competitor's site a check compares, which are also the types of change event.
 * Kept free of imports so route schemas can use it without pulling in the stores.
 */
export const SECTIONS = ["pricing", "hiring", "content", "messaging"] as const;
export type Section = (typeof SECTIONS)[number];
