import { execFile } from 'node:child_process';
import ffmpegInstaller from '@ffmpeg-installer/ffmpeg';

/** The ffmpeg binary shipped inside the npm package `@ffmpeg-installer/<platform>` (decision 0080). */
export const FFMPEG_PATH: string = ffmpegInstaller.path;

/** Runs ffmpeg with `args`; rejects with the tail of its stderr when it fails or the signal aborts. */
export function ffmpeg(args: string[], signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      FFMPEG_PATH,
      ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args],
      { signal, maxBuffer: 4 * 1024 * 1024 },
      (err, _stdout, stderr) => {
        if (err) reject(new Error(`ffmpeg failed: ${String(stderr).trim().slice(-500) || err.message}`));
        else resolve();
      },
    );
  });
}
