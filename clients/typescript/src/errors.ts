/** The error the client raises for a refused or failed request, and its kinds a caller may wait on or handle. */
export class TicketsError extends Error {
  /** `status`: null when no answer came back; `code` and `message`: the server's, or the client's own. */
  constructor(
    readonly status: number | null,
    readonly code: string,
    message: string,
    readonly retryAfter: number | null = null,
  ) {
    super(message);
    this.name = "TicketsError";
  }

  override toString(): string {
    return `${this.name}: ${this.code}: ${this.message}`;
  }
}

/** 503 pool_full: every worker id of the pool is leased; `retryAfter`: seconds until the earliest expiry. */
export class PoolFull extends TicketsError {
  override name = "PoolFull";
}

/** The lease is gone: its renewal was refused (409 lease_lost) or its safe end passed without a renewal. */
export class LeaseLost extends TicketsError {
  override name = "LeaseLost";
}

/** The wall clock went back further than the generator waits: it throws rather than repeat an id. */
export class ClockRollback extends TicketsError {
  override name = "ClockRollback";
}
