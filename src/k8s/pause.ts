// A sleep that stop() can cut short: the retry loops (informers, leader election) wait between
// attempts with it, so shutting down never waits out a backoff. Any finite wait works (timers.ts).
import { setLongTimeout } from './timers.ts';

export class Pause {
  private wakeUp: (() => void) | undefined;

  /** Waits ms, or until wake() is called. */
  async for(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setLongTimeout(resolve, ms);
      this.wakeUp = () => {
        timer.clear();
        resolve();
      };
    });
    this.wakeUp = undefined;
  }

  wake(): void {
    this.wakeUp?.();
  }
}
