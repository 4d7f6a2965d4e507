import { defineModule } from '../../../core/area-module';
import { videoCdnPlane } from './cdn';
import { VIDEO_OUTPUT_OPERATION, VideoOutputs, videoOutputModel } from './outputs';
import type { CoreModuleServices } from '../storage';

export interface VideoModuleServices {
  video: VideoOutputs;
}

/** Legacy video outputs, made by a durable operation and delivered on the CDN. */
export const videoModule = defineModule<VideoModuleServices, CoreModuleServices>({
  name: 'video',
  services: (ctx, { assets }) => ({ video: new VideoOutputs(videoOutputModel(ctx.conn), assets, ctx.engine) }),
  executors: (s) => ({ [VIDEO_OUTPUT_OPERATION]: (ctx) => s.video.run(ctx) }),
  http: { cdn: (app, s) => videoCdnPlane(app, s.assets, s.video) },
});
