# The official package __init__ imports mmcls, timm and mmcv's ops: the harness never runs it.
raise ImportError("a package __init__ of the fake mmselfsup was run")
