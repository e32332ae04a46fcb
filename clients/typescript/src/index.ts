/** Tickets' TypeScript client: `TicketsClient` (SigV4, retries, idempotency keys, range blocks),
 * `TicketLease` (adaptively sized range blocks with background prefetch), `WorkerLease` (a worker id, renewed)
 * and `Snowflake` (ids on one). See docs/reference/clients.md. */
export {
  Block,
  type ClientOptions,
  FUNCTION_TIMEOUT_SECONDS,
  IN_PROGRESS_RETRY_SECONDS,
  MAX_BLOCK,
  JOURNAL_PAGE,
  type RequestOptions,
  type SeriesNumber,
  type SeriesOptions,
  TicketsClient,
} from "./client.js";
export { ClockRollback, LeaseLost, PoolFull, TicketsError } from "./errors.js";
export { type BlockSource, type LeaseOptions, TicketLease } from "./lease.js";
export { type AwsCredentials, type CredentialSource, functionUrlRegion } from "./signing.js";
export {
  Snowflake,
  type SnowflakeOptions,
  type WorkerGrant,
  WorkerLease,
  type WorkerLeaseOptions,
  type WorkerSource,
} from "./workers.js";
