/**
 * The ideas module: the ideas board (scaffold).
 */
import { defineModule } from '../contract';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface IdeasApi {}

declare module '../contract' {
  interface ModuleApis {
    ideas: IdeasApi;
  }
}

export const ideasModule = defineModule({
  name: 'ideas',
  build: () => ({ api: {} as IdeasApi }),
});
