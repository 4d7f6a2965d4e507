import { PlatformError } from '../../../core/errors';

/**
 * Speech-to-text behind an interface (spec 4.3 `/{id}/transcript`). This build ships no speech
 * model: the local provider refuses with a clear code instead of inventing a transcript. A real
 * provider implements `transcribe` and is chosen in `speechProvider()`.
 */
export interface Transcript {
  text: string;
  language: string;
  segments: { start: number; end: number; text: string }[];
}

export interface SpeechToTextProvider {
  readonly name: string;
  transcribe(audio: Buffer, mimeType: string): Promise<Transcript>;
}

export const transcriptionUnavailable = (provider: string) =>
  new PlatformError(
    'assets.transcription_unavailable',
    422,
    'no speech-to-text provider is configured: the local provider does not transcribe',
    { provider },
  );

export class LocalSpeechToText implements SpeechToTextProvider {
  readonly name = 'local';
  transcribe(): Promise<Transcript> {
    return Promise.reject(transcriptionUnavailable(this.name));
  }
}

export const speechProvider = (): SpeechToTextProvider => new LocalSpeechToText();
