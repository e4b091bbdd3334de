export { createProjector, type Projector } from "./projector.ts";
