/**
 * The developer module: developer applications, verification, developer keys and teams (scaffold).
 */
import { defineModule } from '../contract';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface DeveloperApi {}

declare module '../contract' {
  interface ModuleApis {
    developer: DeveloperApi;
  }
}

export const developerModule = defineModule({
  name: 'developer',
  build: () => ({ api: {} as DeveloperApi }),
});
