"""Hand-written natural re-askings of Cranfield queries (position in cran.qry, 0-based -> re-asking).

Written from the query text alone, before the paraphrase scope rule was built or measured, as a
user re-asking the same question in their own words would: shorter, reordered, a different
inflection or a synonym, the question form changed. Used by bench/paraphrase_scope.py only.
"""

REASKINGS: dict[int, str] = {
    0: "similarity laws for building aeroelastic models of heated high-speed aircraft",
    5: "turbulent couette flow behaviour: theoretical and experimental guidance?",
    10: "analytical similar solutions for the strong blast wave problem using the newtonian approximation",
    15: "calculating transverse potential flow around a body of revolution efficiently on an electronic computer",
    20: "why the compressibility transformation fails to correlate high-speed helium and air data",
    25: "approximate formula for displacement thickness of a compressible laminar boundary layer on a flat plate",
    30: (
        "how big an end plate is safe for simulating two dimensional flow over a bluff "
        "cylindrical body with finite aspect ratio"
    ),
    35: "relaxation effects in gaseous heat transfer to a wall that is suddenly heated",
    40: "simple models of the vortex wake behind cruciform wings",
    45: "combined effects of heat and mass transfer at the surface on hypersonic flows",
    50: "boundary layers on very slender bodies of revolution in continuum flow, transverse curvature effects",
    55: "using steady-state aerodynamic data to predict the flutter characteristics of lifting surfaces",
    60: "closed form expressions for local heat transfer around a yawed cylinder",
    65: "matching inner and outer solutions for viscous flow when the main stream is a shear flow",
    70: "hypersonic viscous interaction, experimental results",
    75: (
        "how reliable is the linear viscosity-temperature solution in hypersonic shock "
        "layer analyses at low reynolds numbers"
    ),
    80: "wind tunnel corrections for a two-dimensional aerofoil mounted off-centre in the tunnel",
    85: (
        "experimental techniques to measure oscillatory derivatives of slender "
        "sting-mounted models in supersonic wind tunnels"
    ),
    90: "likely interference effects at transonic speed",
    95: "unsteady lift distribution on finite wings in subsonic flows",
    100: (
        "why do incremental and deformation theories of plastic stress-strain relations "
        "differ so much in stability problems"
    ),
    105: "experimental technique for shell vibrations",
    110: "panel flutter with elastic edge restraints, has it been considered",
    115: "magnitude and distribution of the lift over the cone and cylindrical part of cone-cylinder configurations",
    120: "circumferential buckling, thermal or from mechanical loading",
    125: "fluid injection for thrust vector control",
    130: "compressed columns in creep: predicted instability times versus measured collapse times",
    135: "creep buckling of round tubes under external pressure, results",
    140: "analytical solutions for the stresses in edge-loaded shells of revolution",
    145: "a membrane theory predicting how pressurized membrane cylinders behave in bending",
    150: "best theoretical method to calculate the pressure on a wing surface alone",
    155: "qualitative and quantitative material on ablation materials research",
    165: "experimental results on stability of compressible boundary layers induced by a moving wave",
    175: "approximate analytical solutions of heat conduction using methods other than biot's principle",
    180: "theoretical papers on jet interference with supersonic flow",
    185: "rational approximation of wing-body flow field interference effects",
    200: "nonequilibrium chemical constituents of the viscous shock layer ahead of blunt re-entry vehicles",
    210: "buckling of empty cylindrical shells under nonuniform pressure",
    215: "wave systems created by a static pressure distribution over the surface of a liquid",
    220: "calculating laminar incompressible flow with an arbitrary pressure gradient",
}
