/** The one error the client raises for a refused or failed request. */
export class TicketsError extends Error {
  /**
   * `status` is the HTTP status (null when no answer came back); `code` and `message` are the
   * server's `error` and `message`, or the client's own for failures it saw itself; `retryAfter` the seconds
   * of the answer's Retry-After (null without one).
   */
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
