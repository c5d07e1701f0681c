/**
 * The sounds module: the sound library, uploads, streaming, play and stop (scaffold).
 */
import { defineModule } from '../contract';

/** Per-extension overrides of the plan's sound limits; null clears one (the plan's value applies). */
export interface ExtensionSoundLimits {
  maxSounds: number | null;
  maxSoundFileSize: number | null;
  maxSoundStorageBytes: number | null;
}

export interface SoundsApi {
  /** Sets the overrides present in `limits` (absent keys stay as they are); used by the admin limits routes. */
  setExtensionLimits(extensionId: string, limits: Partial<ExtensionSoundLimits>): Promise<void>;
  extensionLimits(extensionId: string): Promise<ExtensionSoundLimits>;
}

declare module '../contract' {
  interface ModuleApis {
    sounds: SoundsApi;
  }
}

export const soundsModule = defineModule({
  name: 'sounds',
  build: () => ({ api: { setExtensionLimits: () => Promise.reject(new Error('not built')), extensionLimits: () => Promise.reject(new Error('not built')) } as SoundsApi }),
});
