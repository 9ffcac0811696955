/** The intel modules: the registry of the six and the shape each one has. */
export * from "./module.js";
export * from "./registry.js";
