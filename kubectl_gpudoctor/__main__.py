"""`python -m kubectl_gpudoctor` runs the plugin."""
from .cli import main

main()
