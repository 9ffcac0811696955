/** See never-ends.mjs. */
export declare const NEVER_ENDS: string;
