/**
 * The clock lifecycle rules judge ages by. Production reads the wall clock; tests move it forward
 * (`offsetMs`, or `ASSETS_CLOCK_OFFSET_MS` at start) so a 30-day rule is proven without waiting 30
 * days. Only ages are judged by it: leases and timestamps the rules write use the wall clock.
 */
export class Clock {
  constructor(public offsetMs = 0) {}

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  /** Moves the clock forward (tests). */
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
