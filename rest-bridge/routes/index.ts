import type { RouteDef } from '../route-table';
import { publisherRoutes } from './publisher';

/** Every REST route the bridge serves, area by area. */
export const ROUTES: RouteDef<any, any>[] = [...publisherRoutes];
