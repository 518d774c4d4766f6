"""Detection transfer: fine-tune Detectron2 from an exported encoder (`python -m ssl_jax.detection`).

- `train_net`: the entry point (detectron2's `tools/train_net.py` flags), the ROI head MoCo's
  recipe adds, the evaluators, the checks of `MODEL.WEIGHTS`; the only module that imports
  Detectron2 (built by the set-up, `launch/build_detectron2.sh`).
- `weights`: `MODEL.WEIGHTS` against a config, before anything is built (no Detectron2).
- `data`: the CPU study's detection set, Fashion-MNIST items on canvases (no Detectron2).
"""
