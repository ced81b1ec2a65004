"""validate_network.py on the project's own networks (tests/models.py): every output and
gradient within the documented tolerance of a float64 CPU reference."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_validate_network_tiny_models_pass(capsys):
    sys.path.insert(0, ROOT)
    try:
        import validate_network
    finally:
        sys.path.remove(ROOT)
    models, source = validate_network.available_models()
    if "tiny_resnet" not in models:  # torchvision imports here: pick small torchvision nets instead
        names = "mobilenet_v3_small,squeezenet1_0"
    else:
        names = "tiny_resnet,tiny_mobilenet_v3,tiny_convnext,tiny_densenet"
    rc = validate_network.main(["--device", "ocl:0", "--models", names])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "0 failed" in out
