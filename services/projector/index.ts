export { createProjector, type Projector } from "./projector.ts";
export { ProjectorRunningError, rebuildProjection } from "./rebuild.ts";
export { PROJECTOR_LEASE_KEY } from "./rebuild-lease.ts";
