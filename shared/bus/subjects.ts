/** Subject root of all job events: sy.evt.<client_id>.<job_id>.<run|job|cb|ops> (shared/jobs). */
export const EVENT_SUBJECT_ROOT = "sy.evt";
export const AUDIT_SUBJECT_ROOT = "sy.audit";
