/**
 * The audit log (issue #21): append-only records of who did what to a merchant's account. Other
 * folders reach it through this file only.
 */
export { type AuditFilter, type AuditRecordView, listAuditLog } from "./list.js";
export {
  deliverSecurityNotifications,
  type NoticeMailer,
  type NoticeSending,
  securityNotificationJob,
} from "./notifications.js";
export { recordAudit, recordFailedSignIn } from "./record.js";
export { auditRetentionJob, purgeAuditLog } from "./retention.js";
export { type AuditFacts, type AuditRecorder, AuditTrail, audited } from "./trail.js";
