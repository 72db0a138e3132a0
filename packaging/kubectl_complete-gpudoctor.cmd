@echo off
rem Shell completion for `kubectl gpudoctor <TAB>` (kubectl 1.26 or newer): put this file on PATH.
"%~dp0kubectl-gpudoctor\kubectl-gpudoctor.exe" __complete %*
