"""What a run tells its user: progress lines, timers and Ctrl-C (`progress`), and the metric
writers (`writers`: console, JSON lines, TensorBoard, W&B)."""
