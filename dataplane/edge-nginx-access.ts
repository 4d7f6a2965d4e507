import fs from 'node:fs';
import { type NginxEdgeAccessLine, parseAccessLine } from './edge-nginx-config';

/**
 * Follows the nginx engine's access log (docs/decisions/0310-nginx-edge-engine.md): every complete
 * JSON line goes to `onLine` in order, a few milliseconds after nginx writes it (`fs.watch`, with a
 * poll as the fallback). Once the file passes `rotateBytes` and everything in it has been read, it
 * is renamed aside and `reopen()` asks nginx to open a new one (SIGUSR1); the old file is read to its
 * end before it is deleted, so no line is lost.
 */
export class AccessLogTail {
  private fd: number | null = null;
  private offset = 0;
  private partial = '';
  private watcher: fs.FSWatcher | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly buf = Buffer.alloc(256 * 1024);
  private rotated: { fd: number; offset: number; file: string } | null = null;

  constructor(
    private readonly file: string,
    private readonly onLine: (line: NginxEdgeAccessLine) => void,
    private readonly reopen: () => void,
    private readonly rotateBytes = 64 * 1024 * 1024,
    pollMs = 100,
  ) {
    this.open(true);
    this.timer = setInterval(() => this.drain(), pollMs);
    this.timer.unref();
  }

  private open(skipExisting: boolean): void {
    try {
      this.fd = fs.openSync(this.file, 'r');
    } catch {
      this.fd = null;
      return;
    }
    // Lines from an earlier run are not this run's requests.
    this.offset = skipExisting ? fs.fstatSync(this.fd).size : 0;
    this.partial = '';
    try {
      this.watcher = fs.watch(this.file, () => this.drain());
      this.watcher.on('error', () => undefined);
    } catch {
      this.watcher = null;
    }
  }

  /** Reads what is new (also called before `close`). */
  drain(): void {
    if (this.rotated) {
      this.rotated.offset = this.readFrom(this.rotated.fd, this.rotated.offset);
      // nginx's workers reopen on SIGUSR1 within moments; the new file's existence says the master did.
      if (fs.existsSync(this.file) && this.fd === null) this.open(false);
    }
    if (this.fd === null) {
      if (!this.rotated) this.open(false);
      if (this.fd === null) return;
    }
    this.offset = this.readFrom(this.fd, this.offset);
    if (this.rotated && this.fd !== null && this.offset > 0) {
      // Lines reach the new file once every worker has reopened: the old one is then complete.
      this.rotated.offset = this.readFrom(this.rotated.fd, this.rotated.offset);
      fs.closeSync(this.rotated.fd);
      fs.rmSync(this.rotated.file, { force: true });
      this.rotated = null;
    }
    if (!this.rotated && this.offset >= this.rotateBytes) this.rotate();
  }

  private readFrom(fd: number, offset: number): number {
    for (;;) {
      const n = fs.readSync(fd, this.buf, 0, this.buf.length, offset);
      if (n <= 0) return offset;
      offset += n;
      const text = this.partial + this.buf.toString('utf8', 0, n);
      const lines = text.split('\n');
      this.partial = lines.pop() ?? '';
      for (const l of lines) {
        const line = parseAccessLine(l);
        if (line) this.onLine(line);
      }
    }
  }

  private rotate(): void {
    if (this.fd === null) return;
    const aside = `${this.file}.1`;
    fs.renameSync(this.file, aside);
    this.watcher?.close();
    this.watcher = null;
    this.rotated = { fd: this.fd, offset: this.offset, file: aside };
    this.fd = null;
    this.offset = 0;
    this.reopen();
  }

  close(): void {
    this.drain();
    clearInterval(this.timer);
    this.watcher?.close();
    if (this.fd !== null) fs.closeSync(this.fd);
    if (this.rotated) fs.closeSync(this.rotated.fd);
    this.fd = null;
    this.rotated = null;
  }
}
