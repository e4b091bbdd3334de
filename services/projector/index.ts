export { createProjector, type Projector } from "./projector.ts";
export { rebuildProjection } from "./rebuild.ts";
