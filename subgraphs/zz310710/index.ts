import { defineArea } from '../../core/area';
import { Zz310710Resolver } from './resolvers';
import { zz310710Routes } from './routes';
import { Zz310710Service } from './service';

/** The zz310710 area. */
export default defineArea({
  name: 'zz310710',
  portOffset: 8,
  services: () => new Zz310710Service(),
  subgraph: (s) => ({ resolvers: [Zz310710Resolver], createResolver: (cls) => new cls(s) }),
  routes: zz310710Routes,
});
