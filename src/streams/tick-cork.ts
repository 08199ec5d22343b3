import type { Socket } from 'node:net';

/**
 * Holds a socket's writes until the current tick ends, so every event a committed batch brings to a
 * connection leaves in one system call instead of one each. With thousands of stream clients, one write
 * per event per client was the fan-out's cost: the kernel calls, not the framing.
 */
export class TickCork {
  private corked = false;

  constructor(private readonly socket: () => Socket | null | undefined) {}

  /** Call before each write; the socket is uncorked on the next tick. */
  hold(): void {
    if (this.corked) return;
    const socket = this.socket();
    if (!socket || socket.destroyed) return;
    this.corked = true;
    socket.cork();
    process.nextTick(() => {
      this.corked = false;
      socket.uncork();
    });
  }
}
