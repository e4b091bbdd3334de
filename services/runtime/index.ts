export { demoConfig } from "./demo.ts";
export { type RunningHub, SERVICE_NAMES, type ServiceName, startServices } from "./run.ts";
export { setupTopology } from "./setup.ts";
