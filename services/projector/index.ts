export { createProjector, type Projector } from "./projector.ts";
export { ProjectorRunningError, rebuildProjection } from "./rebuild.ts";
