export * from "./chain.ts";
export * from "./checkpoint.ts";
export * from "./verify.ts";
export * from "./views.ts";
