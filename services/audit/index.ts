export { type AuditReport, auditRecords, fileRecords, readViews, streamRecords } from "./audit.ts";
export { type Checkpointer, createCheckpointer } from "./checkpointer.ts";
