/** Tickets' TypeScript client (docs/reference/clients.md): TicketsClient, TicketLease, WorkerLease and Snowflake. */
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
