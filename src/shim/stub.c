/* What the shims link as CJC_REAL_NVRTC (watch.h), so that they need it:
 * never loaded, for the audit module binds that name to NVRTC itself. */
void cjc_real_nvrtc_stub(void);
void cjc_real_nvrtc_stub(void)
{
}
