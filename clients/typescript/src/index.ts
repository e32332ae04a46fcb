/** Tickets' TypeScript client (docs/reference/clients.md): each module's exports, and of signing's, what a caller passes. */
export * from "./client.js";
export * from "./errors.js";
export * from "./lease.js";
export { type AwsCredentials, type CredentialSource, functionUrlRegion } from "./signing.js";
export * from "./workers.js";
