"""The recipe ops on the accelerator, in jnp inside the jitted step (no TensorFlow): the twins of
`ssl_jax.data.host`, each checked against it on the same uniforms (`tests/data/device/`).

`recipe` dispatches a recipe (`apply_recipe`: the colour ops of `data.device_ops`; `recipe_view`:
the whole recipe of `data.pipeline='device'`; `model_views`, `normalize`), with the ops of
`colour`, `geometry` and `randaugment` (`exact`: its float32 arithmetic of the host's float64);
`canvas` cuts the views of `data.device_crops`, `checks` checks that option; `eval_input` is what
every evaluator feeds the model; `color_spaces` and `flow_views` convert RGB for `color_space` and
`learned_flow`.
"""
